"""research/cv/res2net: train.py's own train_net runs unchanged (Res2Net-50 on CIFAR-10 shapes
at 96x96, init_weight's XavierUniform / TruncatedNormal, init_lr's per-step list, Momentum over
init_group_params' weight-decay groups with order_params wrapped in LARS (its lars_filter on
param.name), CrossEntropySmooth, the CPU branch's fp32 Model, LossCallBack + TimeMonitor +
ModelCheckpoint with append_info); only its create_dataset and Model (recording the losses)
are swapped."""

import synth

PROJECT = "research/cv/res2net"
ARGV = [
    "--config_path=config/res2net50_cifar10_config.yaml",
    "--device_target=CPU",
    "--optimizer=LARS",
    "--loss_scale=1",  # the CPU branch trains without a loss scale manager
    "--epoch_size=1",
    "--warmup_epochs=0",
]
EXPORT = True
TRAIN_PY = False
SIZE = 96  # at 32x32 the last stage is 1x1: batch-2 BatchNorm there blows the gradients up


def imports(p):
    import train

    train.config.output_path = str(p.workdir)
    p.train = train


def network(p):
    return p.train.res2net(class_num=p.train.config.class_num)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms

    label = synth.array((2,), "int32", high=10)
    data = synth.dataset({"image": synth.array((2, 3, SIZE, SIZE)), "label": label}, steps)
    p.train.create_dataset = lambda *a, **k: data
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.train_net()
    p.trained = recorder.model.network
    p.model = recorder.model
    return recorder.losses
