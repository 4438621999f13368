"""mindcv (mindspore-lab/mindcv): resnet18 through mindcv.models.create_model, create_loss
("CE", label smoothing), create_scheduler (cosine_decay), create_optimizer (momentum), and
mindcv.utils.create_trainer with EMA and gradient clipping, so that the step is mindcv's own
TrainStep (mindcv/utils/train_step.py) in a Model; 64x64 images (at 32x32 a
batch of 2 leaves layer4 1x1: its batch norms see 2 values and the gradients explode)."""

import synth

REPO = "mindspore-lab+mindcv"
PROJECT = "mindcv"
ALSO = ["train.py", "config.py"]
PATHS = [".."]
ARGV = []
EXPORT = True


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
    return p.create[0](model_name="resnet18", num_classes=10, in_channels=3, pretrained=False)


def inputs(p):
    return synth.tensors(synth.array((2, 3, 64, 64)))


def train(p, steps):
    _, create_loss, create_scheduler, create_optimizer, create_trainer = p.create
    net = network(p)
    loss = create_loss(name="CE", reduction="mean", label_smoothing=0.1)
    lr = create_scheduler(
        steps, scheduler="cosine_decay", lr=0.01, min_lr=1e-6, warmup_epochs=0, num_epochs=2
    )
    opt = create_optimizer(
        net, opt="momentum", lr=lr, weight_decay=1e-4, momentum=0.9, loss_scale=1.0
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
        ema=True,
        ema_decay=0.9,
        clip_grad=True,
        clip_value=15.0,
    )
    data = synth.dataset(
        {"image": synth.array((2, 3, 64, 64)), "label": synth.array((2,), "int32", high=10)}, steps
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data)
