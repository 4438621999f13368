"""mindcv (mindspore-lab/mindcv): a tiny ViT (mindcv.models.vit.VisionTransformer: 32x32 images,
8x8 patches, 2 blocks of width 32), create_scheduler (warmup_cosine_decay), create_optimizer
(adamw, no decay on norms and biases), create_trainer with EMA, clipping and gradient
accumulation over 2 steps (mindcv's TrainStep and GradientAccumulation on jisu.boost), fixed
loss scale 1024."""

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
    from mindcv.models.vit import VisionTransformer

    return VisionTransformer(
        image_size=SIZE,
        patch_size=8,
        embed_dim=32,
        depth=2,
        num_heads=2,
        mlp_ratio=2.0,
        num_classes=10,
    )


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    _, create_loss, create_scheduler, create_optimizer, create_trainer = p.create
    net = network(p)
    loss = create_loss(name="CE", reduction="mean", label_smoothing=0.1)
    lr = create_scheduler(
        steps, scheduler="warmup_cosine_decay", lr=0.002, min_lr=1e-6, warmup_epochs=0, num_epochs=2
    )
    opt = create_optimizer(
        net,
        opt="adamw",
        lr=lr,
        weight_decay=0.05,
        weight_decay_filter="norm_and_bias",
        loss_scale=1024.0,
    )
    model = create_trainer(
        net,
        loss,
        opt,
        {"acc"},
        amp_level="O0",
        amp_cast_list=None,
        loss_scale_type="fixed",
        loss_scale=1024.0,
        drop_overflow_update=False,
        ema=True,
        ema_decay=0.9,
        clip_grad=True,
        clip_value=5.0,
        gradient_accumulation_steps=2,
    )
    data = synth.dataset(
        {"image": synth.array((2, 3, SIZE, SIZE)), "label": synth.array((2,), "int32", high=10)},
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data)
