"""official/gnn/GCN: GCN on a random 60-node graph (Cora-like normalized adjacency), the
project's TrainNetWrapper (its own TrainOneStepCell + Adam) in train.py's custom loop, with
add_flags_recursive(fp16=True) as run_train does."""

import numpy as np
import synth

PROJECT = "official/gnn/GCN"
ARGV = ["--device_target=CPU"]
NODES, FEATURES, CLASSES = 60, 24, 5


def _graph():
    adj = (synth.array((NODES, NODES), seed=5) > 1.0).astype("float32")
    adj = np.maximum(adj, adj.T) + np.eye(NODES, dtype="float32")
    d = 1.0 / np.sqrt(adj.sum(1))
    return (adj * d[:, None] * d[None, :]).astype("float32")


def imports(p):
    from src import config, dataset, gcn, metrics

    p.cfg, p.dataset, p.gcn, p.metrics = config.ConfigGCN(), dataset, gcn, metrics


def network(p):
    net = p.gcn.GCN(p.cfg, FEATURES, CLASSES)
    net.add_flags_recursive(fp16=True)
    return net


def inputs(p):
    return synth.tensors(_graph(), synth.array((NODES, FEATURES), seed=6))


def train(p, steps):
    net = network(p)
    labels = synth.array((NODES,), "int64", high=CLASSES)
    onehot = np.eye(CLASSES, dtype="float32")[labels]
    train_mask = p.dataset.get_mask(NODES, 0, 40)
    train_net = p.metrics.TrainNetWrapper(net, onehot, train_mask, p.cfg)
    adj, feature = inputs(p)
    losses = []
    for _ in range(steps):
        train_net.set_train()
        loss, _accuracy = train_net(adj, feature)
        losses.append(synth.scalar(loss))
    p.trained = net
    return losses
