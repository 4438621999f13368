"""mindocr (mindspore-lab/mindocr): DBNet (det_resnet18 + DBFPN + DBHead with adaptive
thresholds, no pretrained weights) from configs/det/dbnet/db_r18_icdar15.yaml at 64x64 through
tools/train.py's steps: build_model, build_loss (DBLoss: balanced BCE with hard-negative mining,
dice, masked L1), NetWithLossWrapper with the config's column indices (image; binary_map, mask,
thresh_map, thresh_mask), get_loss_scales, create_scheduler (polynomial_decay),
create_group_params + create_optimizer (SGD), mindocr's TrainOneStepWrapper in
ms.Model(train_net); one text rectangle per image."""

import numpy as np
import synth

REPO = "mindspore-lab+mindocr"
PROJECT = "mindocr"
ALSO = ["configs/det/dbnet", "tools"]
PATHS = [".."]
ARGV = []
EXPORT = True
TRAIN_PY = False
# third-party packages of its data pipeline, detection post-processing and KIE metrics only
STUBS = [
    "shapely",
    "pyclipper",
    "lmdb",
    "seqeval",
    "rapidfuzz",
    "albumentations",
    "lanms",
    "sentencepiece",
    "huggingface_hub",
    "mindnlp",
    "tiktoken",
    "pycocotools",
    "Cython",
]
CONFIG = "../configs/det/dbnet/db_r18_icdar15.yaml"
SIZE = 64


def imports(p):
    import yaml
    from addict import Dict
    from mindocr.losses import build_loss
    from mindocr.models import build_model
    from mindocr.optim import create_group_params, create_optimizer
    from mindocr.scheduler import create_scheduler
    from mindocr.utils.loss_scaler import get_loss_scales
    from mindocr.utils.model_wrapper import NetWithLossWrapper
    from mindocr.utils.train_step_wrapper import TrainOneStepWrapper

    with open(CONFIG) as f:
        p.cfg = Dict(yaml.safe_load(f))
    p.cfg.model.backbone.pretrained = False
    p.fns = (
        build_model,
        build_loss,
        NetWithLossWrapper,
        get_loss_scales,
        create_scheduler,
        create_group_params,
        create_optimizer,
        TrainOneStepWrapper,
    )


def network(p):
    import copy

    return p.fns[0](copy.deepcopy(p.cfg.model), amp_level="O0")


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import copy

    import jisu as ms

    (
        _,
        build_loss,
        wrapper,
        get_loss_scales,
        create_scheduler,
        create_group_params,
        create_optimizer,
        train_step,
    ) = p.fns
    cfg = copy.deepcopy(p.cfg)
    net = network(p)
    loss_fn = build_loss(cfg.loss.pop("name"), **cfg["loss"])
    net_with_loss = wrapper(
        net,
        loss_fn,
        input_indices=cfg.train.dataset.net_input_column_index,
        label_indices=cfg.train.dataset.label_column_index,
        pred_cast_fp32=False,
    )
    manager, optimizer_loss_scale = get_loss_scales(cfg)
    cfg.scheduler.warmup_epochs = 0
    lr = create_scheduler(steps, **cfg["scheduler"])
    cfg.optimizer.update({"lr": lr, "loss_scale": optimizer_loss_scale})
    params = create_group_params(net.trainable_params(), **cfg.optimizer)
    optimizer = create_optimizer(params, **cfg.optimizer)
    train_net = train_step(
        net_with_loss,
        optimizer=optimizer,
        scale_sense=manager,
        drop_overflow_update=cfg.system.drop_overflow_update,
        gradient_accumulation_steps=1,
        clip_grad=False,
        clip_norm=1.0,
        ema=None,
    )
    model = ms.Model(train_net)
    binary = np.zeros((2, SIZE, SIZE), np.float32)
    binary[0, 16:28, 8:56] = 1.0
    binary[1, 36:48, 12:44] = 1.0
    mask = np.ones((2, SIZE, SIZE), np.float32)
    thresh_map = np.full((2, SIZE, SIZE), 0.3, np.float32)
    thresh_map[binary > 0] = 0.7
    thresh_mask = np.zeros((2, SIZE, SIZE), np.float32)
    thresh_mask[0, 12:32, 4:60] = 1.0
    thresh_mask[1, 32:52, 8:48] = 1.0
    data = synth.dataset(
        {
            "image": synth.array((2, 3, SIZE, SIZE)),
            "binary_map": binary,
            "mask": mask,
            "thresh_map": thresh_map,
            "thresh_mask": thresh_mask,
        },
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data)
