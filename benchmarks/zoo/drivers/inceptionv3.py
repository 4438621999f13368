"""official/cv/Inception/inceptionv3: train.py's own train_inceptionv3 runs unchanged (InceptionV3
with its auxiliary head at 299x299, the aux-weighted label-smoothing CrossEntropy, RMSProp over
weight-decay groups with order_params and loss_scale, Model with amp_level, LossMonitor +
TimeMonitor + ModelCheckpoint); only its dataset (DS_DICT) and Model (recording the losses) are
swapped."""

import synth

PROJECT = "official/cv/Inception/inceptionv3"
ARGV = ["--config_path=default_config_cpu.yaml"]
EXPORT = True
TRAIN_PY = False
SIZE = 299  # the aux head and the final 8x8 pooling fix the input size


def imports(p):
    import train
    from src import inception_v3

    train.config.epoch_size = 1
    train.config.ckpt_path = str(p.workdir / "ckpt")
    p.train, p.inception = train, inception_v3


def network(p):
    cfg = p.train.config
    return p.inception.InceptionV3(
        num_classes=cfg.num_classes, dropout_keep_prob=cfg.dropout_keep_prob, has_bias=cfg.has_bias
    )


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms

    data = synth.dataset(
        {"image": synth.array((2, 3, SIZE, SIZE)), "label": synth.array((2,), "int32", high=10)},
        steps,
    )
    p.train.DS_DICT[p.train.config.ds_type] = lambda *a, **k: data
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.train_inceptionv3()
    p.trained = recorder.model.network
    p.model = recorder.model
    return recorder.losses
