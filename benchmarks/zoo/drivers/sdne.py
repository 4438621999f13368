"""research/gnn/sdne (WIKI config): train.py's own run_train runs unchanged on a random 30-node
edge list written to the scratch folder (read by networkx as the project does): SDNE
(autoencoder over adjacency rows), SDNEWithLossCell with SDNELoss1 (first- and second-order
proximity over the Laplacian batch), the project's optimizer() (Adam with weight decay) in
Model(net, optimizer=...), ModelCheckpoint/TimeMonitor/LossMonitor and its EvalCallBack's
reconstruction precision at the end; one batch of every node per epoch, 6 epochs."""

import synth

PROJECT = "research/gnn/sdne"
EXPORT = True
NODES = 30
ARGV = ["--dataset=WIKI", "--device_target=CPU", "--epochs=6"]  # paths added by imports()


def imports(p):
    import sys

    edges = synth.array((NODES * 3, 2), "int64", high=NODES, seed=7)
    lines = [f"{a} {b}" for a, b in edges if a != b] + [
        f"{i} {(i + 1) % NODES}" for i in range(NODES)
    ]
    path = p.workdir / "edges.txt"
    path.write_text("\n".join(lines) + "\n")
    (p.workdir / "tmp").mkdir(exist_ok=True)
    sys.argv += [
        f"--data_path={path}",
        f"--train_url={p.workdir / 'tmp'}/",
        f"--ckpt_url={p.workdir / 'ckpt'}",
    ]
    import train
    from src import config, sdne

    config.cfg["WIKI"]["batch"] = NODES
    config.cfg["WIKI"]["hidden_size"] = [16, 8]
    config.cfg["WIKI"]["reconstruction"]["k_query"] = [1, 10, 20]
    p.train, p.sdne, p.cfg = train, sdne, config.cfg


def network(p):
    from src import initializer

    c = p.cfg["WIKI"]
    return p.sdne.SDNE(
        NODES, hidden_size=c["hidden_size"], act=c["act"], weight_init=initializer(c["weight_init"])
    )


def inputs(p):
    return synth.tensors((synth.array((NODES, NODES), seed=8) > 1).astype("float32"))


def train(p, steps):
    import jisu as ms

    made = []
    base = p.train.SDNEWithLossCell
    p.train.SDNEWithLossCell = lambda *a, **k: made.append(base(*a, **k)) or made[-1]
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.run_train()
    p.trained, p.model = made[0].get_backbone(), recorder.model
    return recorder.losses
