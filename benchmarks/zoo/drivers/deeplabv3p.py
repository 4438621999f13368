"""official/cv/DeepLabV3P: DeepLabV3Plus s16 (ResNet-101, ASPP, decoder, ResizeBilinear) at
65x65, train.py's own BuildTrainNetwork + SoftmaxCrossEntropyLoss (fp32 flags) in
Model(train_net, optimizer=Momentum(loss_scale) over cosine_lr, FixedLossScaleManager, amp O0
as train.py off Ascend); labels int32 [N, H, W] with ignore 255."""

import synth

PROJECT = "official/cv/DeepLabV3P"
ARGV = ["--device_target=CPU", "--batch_size=2", "--crop_size=65"]
EXPORT = True
TRAIN_PY = False  # imported in imports(): BuildTrainNetwork lives there
SIZE, CLASSES, IGNORE = 65, 21, 255


def imports(p):
    import train  # the project's train.py: BuildTrainNetwork, parse_args
    from src import learning_rates, loss
    from src.deeplab_v3plus import DeepLabV3Plus

    p.train, p.args, p.loss, p.net, p.lr = (
        train,
        train.parse_args(),
        loss,
        DeepLabV3Plus,
        learning_rates,
    )


def network(p):
    return p.net("eval", p.args.num_classes, 16, p.args.freeze_bn)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    a = p.args
    net = p.net("train", a.num_classes, 16, a.freeze_bn)
    loss_ = p.loss.SoftmaxCrossEntropyLoss(a.num_classes, a.ignore_label)
    train_net = p.train.BuildTrainNetwork(net, loss_)
    lr_iter = p.lr.cosine_lr(a.base_lr / 10, steps * 10, steps * 10)
    opt = nn.Momentum(
        params=train_net.trainable_params(),
        learning_rate=lr_iter,
        momentum=0.9,
        weight_decay=0.0001,
        loss_scale=a.loss_scale,
    )
    manager = ms.train.loss_scale_manager.FixedLossScaleManager(
        a.loss_scale, drop_overflow_update=False
    )
    model = ms.Model(train_net, optimizer=opt, amp_level="O0", loss_scale_manager=manager)
    loss_.add_flags_recursive(fp32=True)
    label = synth.array((2, SIZE, SIZE), "int32", high=a.num_classes)
    label[:, :4] = a.ignore_label
    data = synth.dataset({"data": synth.array((2, 3, SIZE, SIZE)), "label": label}, steps)
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
