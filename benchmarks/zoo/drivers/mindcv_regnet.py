"""mindcv (mindspore-lab/mindcv): regnet_x_200mf through create_model at 64x64, create_optimizer
(momentum with nesterov), create_scheduler (polynomial_decay), create_trainer with clipping and
gradient accumulation over 2 steps (mindcv's TrainStep and GradientAccumulation on jisu.boost)."""

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
    return p.create[0](model_name="regnet_x_200mf", num_classes=10, in_channels=3, pretrained=False)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    _, create_loss, create_scheduler, create_optimizer, create_trainer = p.create
    net = network(p)
    loss = create_loss(name="CE", reduction="mean", label_smoothing=0.1)
    lr = create_scheduler(
        steps,
        scheduler="polynomial_decay",
        lr=0.02,
        min_lr=1e-6,
        decay_epochs=2,
        warmup_epochs=0,
        num_epochs=2,
    )
    opt = create_optimizer(
        net, opt="nesterov", lr=lr, weight_decay=1e-4, momentum=0.9, loss_scale=1.0
    )
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
        clip_grad=True,
        clip_value=10.0,
        gradient_accumulation_steps=2,
    )
    data = synth.dataset(
        {"image": synth.array((2, 3, SIZE, SIZE)), "label": synth.array((2,), "int32", high=10)},
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data)
