"""official/cv/DeepLabv3: deeplab_v3_s16 (ResNet-101 backbone) at 65x65, train.py's own
BuildTrainNetwork + SoftmaxCrossEntropyLoss in Model(train_net, optimizer=...) with
FixedLossScaleManager (amp O0 on CPU, as train.py); labels int32 [N, H, W] with ignore 255."""

import synth

PROJECT = "official/cv/DeepLabv3"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
TRAIN_PY = False  # imported in imports(): BuildTrainNetwork lives there
SIZE = 65


def imports(p):
    import train  # the project's train.py: BuildTrainNetwork, config
    from src.loss import loss
    from src.nets import net_factory
    from src.utils import learning_rates

    p.train, p.config, p.loss, p.nets, p.lr = train, train.config, loss, net_factory, learning_rates


def network(p):
    c = p.config
    return p.nets.nets_map[c.model]("eval", c.num_classes, 16, c.freeze_bn)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    c = p.config
    net = p.nets.nets_map[c.model]("train", c.num_classes, 16, c.freeze_bn)
    loss_ = p.loss.SoftmaxCrossEntropyLoss(c.num_classes, c.ignore_label)
    train_net = p.train.BuildTrainNetwork(net, loss_)
    lr_iter = p.lr.cosine_lr(c.base_lr, steps * 10, steps * 10)
    opt = nn.Momentum(
        params=train_net.trainable_params(),
        learning_rate=lr_iter,
        momentum=0.9,
        weight_decay=0.0001,
        loss_scale=c.loss_scale,
    )
    manager = ms.train.loss_scale_manager.FixedLossScaleManager(
        c.loss_scale, drop_overflow_update=False
    )
    model = ms.Model(train_net, optimizer=opt, amp_level="O0", loss_scale_manager=manager)
    loss_.add_flags_recursive(fp32=True)
    label = synth.array((2, SIZE, SIZE), "int32", high=c.num_classes)
    label[:, :4] = c.ignore_label
    data = synth.dataset({"data": synth.array((2, 3, SIZE, SIZE)), "label": label}, steps)
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
