"""mindcv (mindspore-lab/mindcv): mobilenet_v3_small_100 (hard-swish, squeeze-excite) through
create_model at 64x64, create_optimizer (nadam), create_scheduler (step_decay), create_trainer
with EMA (mindcv's TrainStep in a Model)."""

import synth

REPO = "mindspore-lab+mindcv"
PROJECT = "mindcv"
ALSO = ["train.py", "config.py"]
PATHS = [".."]
ARGV = []
EXPORT = True
SIZE = 64


def imports(p):
    import mindcv
    from mindcv.loss import create_loss
    from mindcv.models import create_model
    from mindcv.optim import create_optimizer
    from mindcv.scheduler import create_scheduler
    from mindcv.utils import create_trainer

    p.mindcv = mindcv
    p.create = (create_model, create_loss, create_scheduler, create_optimizer, create_trainer)


def network(p):
    return p.create[0](
        model_name="mobilenet_v3_small_100", num_classes=10, in_channels=3, pretrained=False
    )


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    _, create_loss, create_scheduler, create_optimizer, create_trainer = p.create
    net = network(p)
    loss = create_loss(name="CE", reduction="mean", label_smoothing=0.1)
    lr = create_scheduler(
        steps,
        scheduler="step_decay",
        lr=0.002,
        decay_epochs=1,
        decay_rate=0.5,
        warmup_epochs=0,
        num_epochs=2,
    )
    opt = create_optimizer(net, opt="nadam", lr=lr, weight_decay=1e-5, loss_scale=1.0)
    model = create_trainer(
        net,
        loss,
        opt,
        {"acc"},
        amp_level="O0",
        amp_cast_list=None,
        loss_scale_type="fixed",
        loss_scale=1.0,
        drop_overflow_update=False,
        ema=True,
        ema_decay=0.99,
    )
    data = synth.dataset(
        {"image": synth.array((2, 3, SIZE, SIZE)), "label": synth.array((2,), "int32", high=10)},
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data)
