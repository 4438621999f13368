"""research/gnn/gat (default_config.yaml, Cora-like): train.py's own gnn_train runs unchanged
on a random 40-node graph (only load_and_process is synthetic): GAT with attention heads
(add_flags_recursive(fp16=True)), the project's TrainGAT (MaskedSoftMaxLoss with P.L2Loss over
a ParameterTuple, its own TrainOneStepCell + Adam) in its epoch loop with LossAccuracyWrapper,
save_checkpoint of the best epoch and load_checkpoint(net=...) of it into a test network."""

import numpy as np
import synth

PROJECT = "research/gnn/gat"
ARGV = ["--config_path=default_config.yaml"]
EXPORT = True
NODES, FEATURES, CLASSES = 40, 16, 4


def _graph():
    adj = (synth.array((NODES, NODES), seed=5) > 1.0).astype("float32")
    adj = np.minimum(np.maximum(adj, adj.T) + np.eye(NODES, dtype="float32"), 1.0)
    biases = (-1e9 * (1.0 - adj))[np.newaxis].astype("float32")  # the project's adj_to_bias
    return synth.array((1, NODES, FEATURES), seed=6), biases


def imports(p):
    import train
    from src import gat, utils

    p.train, p.gat, p.utils = train, gat, utils


def network(p):
    c = p.train.config
    net = p.gat.GAT(FEATURES, CLASSES, NODES, c.hid_units, c.n_heads, attn_drop=0.0, ftr_drop=0.0)
    net.add_flags_recursive(fp16=True)
    return net


def inputs(p):
    return synth.tensors(*_graph())


def _load(*_args):
    feature, biases = _graph()
    label = np.eye(CLASSES, dtype="float32")[synth.array((NODES,), "int64", high=CLASSES)]
    masks = [np.zeros(NODES, bool) for _ in range(3)]
    masks[0][:20], masks[1][20:30], masks[2][30:] = True, True, True
    ys = [(label * m[:, None])[np.newaxis] for m in masks]
    return feature, biases, ys[0], masks[0][None], ys[1], masks[1][None], ys[2], masks[2][None]


def train(p, steps):
    import os

    c = p.train.config
    c.num_epochs, c.early_stopping, c.lr = steps, steps + 1, 0.01
    c.attn_dropout = c.feature_dropout = 0.0  # a fixed batch: the loss must fall
    p.train.load_and_process = _load
    losses, nets = [], []
    base = p.utils.TrainGAT

    class Recording(base):
        def __init__(self, network, *args, **kw):
            super().__init__(network, *args, **kw)
            nets.append(network)

        def construct(self, feature, biases):
            out = super().construct(feature, biases)
            losses.append(synth.scalar(out[0]))
            return out

    p.train.TrainGAT = Recording
    os.chdir(p.workdir)
    p.train.gnn_train()
    p.trained = nets[0]
    return losses
