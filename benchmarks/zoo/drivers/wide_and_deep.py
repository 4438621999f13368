"""official/recommend/Wide_and_Deep (default_config.yaml): train.py's own test_train runs
unchanged with 39 fields, a 1000-id vocabulary and a 2-layer deep part: WideDeepModel,
NetWithLossClass (two losses), the project's TrainStepWrap (two GradOperations with sens over
the wide and deep ParameterTuples, FTRL and Adam with loss_scale) in Model(train_net), its
LossCallBack, TimeMonitor and ModelCheckpoint, sink mode; only create_dataset is synthetic and
Model records the (wide) losses."""

import synth

PROJECT = "official/recommend/Wide_and_Deep"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
STUBS = ["pandas"]  # reads the h5 data set only
FIELDS, VOCAB = 39, 1000


def imports(p):
    import os

    import train
    from src import wide_and_deep

    c = train.config
    c.vocab_size, c.batch_size, c.epochs = VOCAB, 2, 1
    c.emb_dim, c.deep_layer_dim = 8, [32, 16, 16, 8]  # the model takes four layers
    c.ckpt_path = str(p.workdir / "ckpt")
    c.loss_file_name = str(p.workdir / "loss.log")
    os.environ.setdefault("DEVICE_ID", "0")
    p.train, p.wd = train, wide_and_deep


def network(p):
    return p.wd.WideDeepModel(p.train.config)


def _columns():
    return synth.array((2, FIELDS), "int32", high=VOCAB), synth.array((2, FIELDS), seed=2)


def inputs(p):
    return synth.tensors(*_columns())


def train(p, steps):
    import jisu as ms

    ids, vals = _columns()
    data = synth.dataset(
        {"feat_ids": ids, "feat_vals": vals, "label": synth.array((2, 1), "float32", high=2)},
        steps,
    )
    made = []
    p.train.create_dataset = lambda *a, **k: data
    p.train.WideDeepModel = lambda cfg: made.append(p.wd.WideDeepModel(cfg)) or made[-1]
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.test_train(p.train.config)
    p.trained, p.model = made[0], recorder.model
    return recorder.losses
