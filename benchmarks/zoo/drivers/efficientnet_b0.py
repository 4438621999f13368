"""official/cv/Efficientnet/efficientnet-b0: train.py's own _create_net (EfficientNet-B0 with
drop-connect, CIFAR-10 config, 96x96 images), get_lr (warmup + stepwise decay list) and
_create_optim (RMSProp with loss_scale); as its __main__ block wires them:
LabelSmoothingCrossEntropy with add_flags_recursive(fp32=True), FixedLossScaleManager, Model with
amp_level and the nn.Loss / Top1 / Top5 metrics, LossMonitor + TimeMonitor + SummaryCollector,
and its EvalCallBack running Model.eval after the epoch."""

import synth

PROJECT = "official/cv/Efficientnet/efficientnet-b0"
ARGV = ["--config_path=efficientnet_b0_cifar10_config.yaml", "--platform=CPU"]
EXPORT = True
SIZE = 96  # at 32x32 the last stage is 1x1: batch-2 BatchNorm then gives +-1 features


def imports(p):
    import train
    from src.callbacks import EvalCallBack
    from src.config import config
    from src.loss import LabelSmoothingCrossEntropy

    p.train, p.config = train, config
    p.EvalCallBack, p.Loss = EvalCallBack, LabelSmoothingCrossEntropy


def network(p):
    return p.train._create_net()


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms
    from jisu import nn
    from jisu.train.callback import LossMonitor, SummaryCollector, TimeMonitor

    cfg = p.config
    net = network(p)
    label = synth.array((2,), "int32", high=10)
    columns = {"image": synth.array((2, 3, SIZE, SIZE)), "label": label}
    data, val = synth.dataset(columns, steps), synth.dataset(columns, 1)
    loss = p.Loss(smooth_factor=cfg.smoothing, num_classes=cfg.num_classes)
    loss_scale = ms.FixedLossScaleManager(cfg.loss_scale, drop_overflow_update=False)
    metrics = {
        "Loss": nn.Loss(),
        "Top1-Acc": nn.Top1CategoricalAccuracy(),
        "Top5-Acc": nn.Top5CategoricalAccuracy(),
    }
    lr = ms.Tensor(
        p.train.get_lr(
            base_lr=cfg.lr,
            total_epochs=1,
            steps_per_epoch=steps,
            decay_steps=cfg.decay_epochs,
            decay_rate=cfg.decay_rate,
            warmup_steps=0,
            warmup_lr_init=cfg.warmup_lr_init,
        )
    )
    opt = p.train._create_optim(net, lr)
    loss.add_flags_recursive(fp32=True, fp16=False)
    model = ms.Model(
        net, loss, opt, loss_scale_manager=loss_scale, amp_level=cfg.amp_level, metrics=metrics
    )
    log = {"Epoch": [], "Val_Loss": [], "Val_Top1-Acc": [], "Val_Top5-Acc": []}
    callbacks = (
        TimeMonitor(data_size=steps),
        LossMonitor(per_print_times=1),
        SummaryCollector(str(p.workdir / "summary")),
        p.EvalCallBack(model, val, eval_per_epoch=1, eval_log=log),
    )
    p.trained, p.model = net, model
    losses = synth.model_train(model, data, callbacks)
    if not log["Val_Loss"]:
        raise RuntimeError("EvalCallBack did not evaluate")
    return losses
