"""research/cv/googlenet: train.py's own run_train runs unchanged (GoogLeNet, CIFAR-10 branch at
64x64: Momentum over a filter(...) iterator of net.get_parameters(), the lr_steps_cifar10 list,
Model at amp_level O2 with keep_batchnorm_fp32=False, TimeMonitor + ModelCheckpoint +
LossMonitor, dataset_sink_mode=True); only its create_dataset_cifar10 and Model (recording the
losses) are swapped."""

import synth

PROJECT = "research/cv/googlenet"
ARGV = ["--config_path=cifar10_config_cpu.yaml"]
EXPORT = True
TRAIN_PY = False
SIZE = 64


def imports(p):
    import train
    from src import googlenet

    train.config.epoch_size = 1
    train.config.lr_init = 0.01  # its rate is for batch 128
    train.config.output_path = str(p.workdir)
    p.train, p.googlenet = train, googlenet


def network(p):
    return p.googlenet.GoogleNet(num_classes=p.train.config.num_classes)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms

    label = synth.array((2,), "int32", high=10)
    data = synth.dataset({"image": synth.array((2, 3, SIZE, SIZE)), "label": label}, steps)
    p.train.create_dataset_cifar10 = lambda *a, **k: data
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.run_train()
    p.trained = recorder.model.network
    p.model = recorder.model
    return recorder.losses
