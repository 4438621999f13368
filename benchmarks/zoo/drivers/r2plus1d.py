"""research/cv/r2plus1d: R2Plus1D (Conv3d (2+1)D factorised blocks, BatchNorm3d, ReduceMean over
(T, H, W)), one BasicBlock per stage, on 8x32x32 clips, train.py's get_lr schedule, SGD and its
Model(net, SoftmaxCrossEntropyWithLogits(sum), opt, amp_level="auto") with LossMonitor."""

import synth

PROJECT = "research/cv/r2plus1d"
ARGV = ["--device_target=CPU", "--num_classes=5", "--batch_size=2", "--epochs=2"]
EXPORT = True
TRAIN_PY = False  # imported in imports(): get_lr lives there
CLIP = (2, 3, 8, 32, 32)


def imports(p):
    import train  # the project's train.py
    from src import models
    from src.config import config

    p.train, p.models, p.cfg = train, models, config


def network(p):
    m = p.models
    return m.R2Plus1D(num_classes=p.cfg.num_classes, block=m.BasicBlock, layers=[1, 1, 1, 1])


def inputs(p):
    return synth.tensors(synth.array(CLIP))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.cfg
    net = network(p)
    net.set_train()
    lr_list = p.train.get_lr(steps, cfg.epochs, cfg.lr)
    optimizer = nn.SGD(
        params=net.trainable_params(),
        momentum=cfg.momentum,
        learning_rate=ms.Tensor(lr_list, ms.float32),
        weight_decay=cfg.weight_decay,
    )
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="sum")
    model = ms.Model(net, loss_fn, optimizer, amp_level="auto")
    data = synth.dataset(
        {"video": synth.array(CLIP), "label": synth.array((2,), "int32", high=cfg.num_classes)},
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(1),))
