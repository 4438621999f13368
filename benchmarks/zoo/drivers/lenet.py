"""research/cv/lenet: train.py's own train_lenet runs unchanged (LeNet5, Momentum,
SoftmaxCrossEntropyWithLogits, Model with Accuracy, TimeMonitor + ModelCheckpoint +
LossMonitor, dataset_sink_mode=True); only its create_dataset (32x32 grey images, int32 labels)
and Model (recording the losses) are swapped."""

import synth

PROJECT = "research/cv/lenet"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
TRAIN_PY = False


def imports(p):
    import train
    from src import lenet

    train.config.epoch_size = 1
    train.config.ckpt_path = str(p.workdir / "ckpt")
    p.train, p.lenet = train, lenet


def network(p):
    return p.lenet.LeNet5(p.train.config.num_classes)


def inputs(p):
    return synth.tensors(synth.array((2, 1, 32, 32)))


def train(p, steps):
    import jisu as ms

    data = synth.dataset(
        {"image": synth.array((2, 1, 32, 32)), "label": synth.array((2,), "int32", high=10)}, steps
    )
    p.train.create_dataset = lambda *a, **k: data
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.train_lenet()
    p.trained = recorder.model.network
    p.model = getattr(recorder, "model", None)
    return recorder.losses
