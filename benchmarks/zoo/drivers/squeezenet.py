"""research/cv/squeezenet (squeezenet_cifar10_config.yaml): train.py's own train_net runs
unchanged (SqueezeNet, the project's poly lr, Momentum with Nesterov, Model with {'acc'},
TimeMonitor + LossMonitor + ModelCheckpoint, dataset_sink_mode=True) at 64x64 for one epoch;
only its create_dataset and Model (recording the losses) are swapped."""

import synth

PROJECT = "research/cv/squeezenet"
ARGV = ["--config_path=squeezenet_cifar10_config.yaml", "--device_target=CPU"]
EXPORT = True
TRAIN_PY = False
SIZE = 64


def imports(p):
    import train

    train.config.epoch_size = 1
    train.config.warmup_epochs = 0
    train.config.output_path = str(p.workdir / "out")
    p.train = train


def network(p):
    return p.train.squeezenet(num_classes=p.train.config.class_num)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms

    data = synth.dataset(
        {"image": synth.array((2, 3, SIZE, SIZE)), "label": synth.array((2,), "int32", high=10)},
        steps,
    )
    p.train.create_dataset = lambda *a, **k: data
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.train_net()
    p.trained = recorder.model.network
    p.model = recorder.model
    return recorder.losses
