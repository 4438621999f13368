"""mindocr (mindspore-lab/mindocr): CRNN (rec_vgg7 + RNNEncoder + CTCHead) from
configs/rec/crnn/crnn_vgg7.yaml at 32x100 through tools/train.py's steps: build_model,
build_loss (CTCLoss), NetWithLossWrapper with the config's column indices, get_loss_scales,
create_scheduler, create_group_params + create_optimizer (adamw), mindocr's
TrainOneStepWrapper in ms.Model(train_net); labels int32 [N, 23] padded with the blank
(36, the last class)."""

import numpy as np
import synth

REPO = "mindspore-lab+mindocr"
PROJECT = "mindocr"
ALSO = ["configs/rec/crnn", "tools"]
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
CONFIG = "../configs/rec/crnn/crnn_vgg7.yaml"


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
    p.cfg.loss.batch_size = 2
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
    return synth.tensors(synth.array((2, 3, 32, 100)))


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
    label = np.full((2, 23), 36, "int32")  # RecCTCLabelEncode: blank_at_last, pads with it
    label[:, :6] = synth.array((2, 6), "int32", high=36)
    data = synth.dataset({"image": synth.array((2, 3, 32, 100)), "text_seq": label}, steps)
    p.trained, p.model = net, model
    return synth.model_train(model, data)
