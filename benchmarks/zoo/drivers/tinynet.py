"""research/cv/tinynet: TinyNet-E at 96x96 wired as train.py's __main__ block does (its own
argument parser): LabelSmoothingCrossEntropy with add_flags_recursive(fp32=True), the warmup +
step-decay get_lr list, SGD over add_weight_decay's groups with loss_scale,
FixedLossScaleManager, Model with Loss / Top1 / Top5 metrics and amp_level, its LossMonitor
(per-step lr), and its EmaEvalCallBack: a copy.deepcopy of the network, the EMA of every
parameter kept as NumPy arrays (param.data.asnumpy()), loaded back with set_data(Parameter(...)),
both networks evaluated with Model.eval and the EMA saved with save_checkpoint(list of dicts)."""

import copy

import synth

PROJECT = "research/cv/tinynet"
ARGV = []
EXPORT = False
SIZE, CLASSES = 96, 10


def imports(p):
    import train
    from src import tinynet

    p.args = train.parser.parse_args(
        ["--model=tinynet_e", f"--num-classes={CLASSES}", "--ema-decay=0.9", "--lr=0.005"]
    )
    p.train, p.tinynet = train, tinynet


def network(p):
    p.tinynet.default_cfgs["efficientnet_b0"]["input_size"] = (3, 224, 224)  # tinynet rescales it
    a = p.args
    return p.train.tinynet(
        sub_model=a.model.split("_")[1],
        num_classes=a.num_classes,
        drop_rate=a.drop,
        drop_connect_rate=a.drop_connect,
        global_pool="avg",
        bn_tf=a.bn_tf,
        bn_momentum=a.bn_momentum,
        bn_eps=a.bn_eps,
    )


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms
    from jisu.nn import SGD, Loss, Top1CategoricalAccuracy, Top5CategoricalAccuracy

    a, t = p.args, p.train
    net = network(p)
    columns = {
        "image": synth.array((2, 3, SIZE, SIZE)),
        "label": synth.array((2,), "int32", high=CLASSES),
    }
    data, val = synth.dataset(columns, steps), synth.dataset(columns, 1)
    loss = t.LabelSmoothingCrossEntropy(smooth_factor=a.smoothing, num_classes=a.num_classes)
    scale_manager = ms.FixedLossScaleManager(a.loss_scale, drop_overflow_update=False)
    lr_array = t.get_lr(
        base_lr=a.lr,
        total_epochs=1,
        steps_per_epoch=steps,
        decay_epochs=a.decay_epochs,
        decay_rate=a.decay_rate,
        warmup_epochs=0,
        warmup_lr_init=a.warmup_lr,
        global_epoch=0,
    )
    loss_cb = t.LossMonitor(lr_array, 1, per_print_times=1, start_epoch=0)
    groups = t.add_weight_decay(net, weight_decay=a.weight_decay)
    opt = SGD(
        groups,
        learning_rate=ms.Tensor(lr_array),
        momentum=a.momentum,
        weight_decay=a.weight_decay,
        loss_scale=a.loss_scale,
    )
    loss.add_flags_recursive(fp32=True, fp16=False)
    metrics = {
        "Validation-Loss": Loss(),
        "Top1-Acc": Top1CategoricalAccuracy(),
        "Top5-Acc": Top5CategoricalAccuracy(),
    }
    model = ms.Model(
        net, loss, opt, metrics=metrics, loss_scale_manager=scale_manager, amp_level=a.amp_level
    )
    net_ema = copy.deepcopy(net)
    net_ema.set_train(False)
    ema_cb = t.EmaEvalCallBack(
        network=net,
        ema_network=net_ema,
        loss_fn=loss,
        eval_dataset=val,
        decay=a.ema_decay,
        save_epoch=a.ckpt_save_epoch,
        dataset_sink_mode=False,
        start_epoch=0,
    )
    p.trained, p.model = net, model
    losses = synth.model_train(model, data, (loss_cb, ema_cb, t.TimeMonitor(data_size=steps)))
    if not ema_cb.ema_accuracy:
        raise RuntimeError("EmaEvalCallBack did not evaluate the EMA network")
    return losses
