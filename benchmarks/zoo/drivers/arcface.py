"""official/cv/Arcface: IResNet (IBasicBlock, one block per stage, PReLU, BatchNorm1d features
with a frozen gamma) at 16x16 (fc_scale 1), train.py's MyNetWithLoss (the backbone
to_float(float16), PartialFC with ArcFace margin and its own SoftMaxCE, whose method named
forward is a helper) and its SGD over the lr_generator schedule in Model(train_net,
optimizer=...), 10 classes."""

import synth

PROJECT = "official/cv/Arcface"
ARGV = [
    "--num_classes=10",
    "--batch_size=2",
    "--device_num=1",
    "--epochs=2",
]
EXPORT = True
TRAIN_PY = False  # imported in imports(): MyNetWithLoss lives there
SIZE = 16


def imports(p):
    import train  # the project's train.py
    from src import iresnet

    class TinyIResNet(iresnet.IResNet):
        fc_scale = (SIZE // 16) ** 2  # the stages halve the size four times

    p.train, p.iresnet, p.Tiny = train, iresnet, TinyIResNet


def network(p):
    import jisu as ms

    # as MyNetWithLoss leaves it: the backbone computes in float16
    return p.Tiny(p.iresnet.IBasicBlock, [1, 1, 1, 1]).to_float(ms.float16)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    tr, args = p.train, p.train.args
    net = network(p)
    train_net = tr.MyNetWithLoss(net, args)
    lr = tr.lr_generator(args.lr, args.epochs, steps_per_epoch=steps)
    optimizer = nn.SGD(
        params=train_net.trainable_params(),
        learning_rate=lr / 512 * args.batch_size * args.device_num,
        momentum=args.momentum,
        weight_decay=args.weight_decay,
    )
    model = ms.Model(train_net, optimizer=optimizer)
    data = synth.dataset(
        {"image": synth.array((2, 3, SIZE, SIZE)), "label": synth.array((2,), "int32", high=10)},
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
