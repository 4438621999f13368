"""mindcv (mindspore-lab/mindcv): convnextv2_atto (GRN, drop path) through create_model at 32x32,
create_optimizer (lion, no decay on norms and biases), create_scheduler (cosine_decay), and
create_trainer's plain path: Model with amp_level O2 and a FixedLossScaleManager (no
EMA/clipping: mindcv hands MindSpore's Model the network)."""

import synth

REPO = "mindspore-lab+mindcv"
PROJECT = "mindcv"
ALSO = ["train.py", "config.py"]
PATHS = [".."]
ARGV = []
EXPORT = True
SIZE = 32


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
        model_name="convnextv2_atto", num_classes=10, in_channels=3, pretrained=False
    )


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    _, create_loss, create_scheduler, create_optimizer, create_trainer = p.create
    net = network(p)
    loss = create_loss(name="CE", reduction="mean", label_smoothing=0.1)
    lr = create_scheduler(
        steps, scheduler="cosine_decay", lr=2e-4, min_lr=1e-6, warmup_epochs=0, num_epochs=2
    )
    opt = create_optimizer(
        net,
        opt="lion",
        lr=lr,
        weight_decay=0.05,
        weight_decay_filter="norm_and_bias",
        loss_scale=128.0,
    )
    model = create_trainer(
        net,
        loss,
        opt,
        {"acc"},
        amp_level="O2",
        amp_cast_list=None,
        loss_scale_type="fixed",
        loss_scale=128.0,
        drop_overflow_update=False,
    )
    data = synth.dataset(
        {"image": synth.array((2, 3, SIZE, SIZE)), "label": synth.array((2,), "int32", high=10)},
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data)
