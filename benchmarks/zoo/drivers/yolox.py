"""official/cv/YOLOX: YOLOX-DarkNet53 (DetectionBlock with YOLOFPN, decoupled heads) at 64x64,
default_recurisive_init, YOLOLossCell (SimOTA dynamic-k matching with TopK/GatherNd/
ArgMinWithValue, IoU, BCE losses), train.py's get_optimizer (SGD), DynamicLossScaleManager's
update cell and TrainOneStepWithEMA (a TrainOneStepWithLossScaleCell subclass with EMA
weights) in Model, as train.py; synthetic padded labels [N, max_gt, 5] (class, cx, cy, w, h in
pixels) and the anchor masks its dataset precomputes (pre_fg_mask, is_inbox_and_inCenter
[N, max_gt, anchors])."""

import numpy as np
import synth

PROJECT = "official/cv/YOLOX"
SIZE, STRIDES = 64, (8, 16, 32)
ARGV = ["--config_path=yolox_darknet53.yaml", "--device_target=CPU", "--per_batch_size=2",
        "--max_gt=8", "--is_distributed=0"]  # fmt: skip
EXPORT = True
STUBS = ["pycocotools"]  # COCO evaluation only (src/util.py)
TRAIN_PY = False  # imported in imports(): get_optimizer lives there


def imports(p):
    from model_utils.config import config

    config.input_size = [SIZE, SIZE]  # a list: not a command-line option
    import train  # the project's train.py: get_optimizer
    from src import initializer, util, yolox

    p.config, p.train, p.yolox, p.init, p.util = config, train, yolox, initializer, util


def network(p):
    return p.yolox.DetectionBlock(p.config, backbone="yolofpn")


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def labels(cfg, batch=2):
    centers = np.concatenate(
        [
            np.stack(np.meshgrid(np.arange(SIZE // s), np.arange(SIZE // s))[::-1], -1)
            .reshape(-1, 2)[:, ::-1]
            .astype("float32")
            * s
            + s / 2
            for s in STRIDES
        ]
    )  # (anchors, 2): x, y of each anchor's centre, stride 8 first, row-major
    rng = np.random.default_rng(11)
    lab = np.zeros((batch, cfg.max_gt, 5), "float32")
    fg = np.zeros((batch, cfg.max_gt, len(centers)), "float32")
    for b in range(batch):
        for k in range(3):
            cx, cy = rng.uniform(16, 48, 2)
            w, h = rng.uniform(12, 30, 2)
            lab[b, k] = (rng.integers(0, cfg.num_classes), cx, cy, w, h)
            inside = (np.abs(centers[:, 0] - cx) < w / 2) & (np.abs(centers[:, 1] - cy) < h / 2)
            fg[b, k] = inside
    return lab, fg, fg.astype(bool)


def train(p, steps):
    import logging

    import jisu as ms

    cfg = p.config
    cfg.logger = logging.getLogger("yolox")  # train.py's set_default makes its own logger
    base = network(p)
    p.init.default_recurisive_init(base)
    net = p.yolox.YOLOLossCell(base, cfg)
    cfg.steps_per_epoch, cfg.max_epoch, cfg.warmup_epochs = steps, 300, 0
    lr = p.util.get_lr(cfg)
    opt = p.train.get_optimizer(cfg, net, lr)
    manager = ms.DynamicLossScaleManager(init_loss_scale=2**22)
    train_net = p.yolox.TrainOneStepWithEMA(
        net, opt, manager.get_update_cell(), ema=cfg.use_ema, decay=0.9998
    ).set_train()
    lab, fg, inbox = labels(cfg)
    data = synth.dataset(
        {
            "image": synth.array((2, 3, SIZE, SIZE)),
            "labels": lab,
            "pre_fg_mask": fg,
            "is_inbox_and_inCenter": inbox,
        },
        steps,
    )
    model = ms.Model(train_net)
    p.trained, p.model = base, model
    return synth.model_train(model, data)
