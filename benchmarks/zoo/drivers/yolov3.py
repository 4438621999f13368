"""official/cv/YOLOv3: YOLOV3DarkNet53 (DarkNet with one residual block per stage) at 64x64,
default_recurisive_init, YoloWithLossCell (three YoloLossBlocks: IoU ignore mask, XY/WH/
confidence/class losses), Momentum over get_param_groups with loss_scale, and train.py's CPU
wiring nn.TrainOneStepCell(network, opt, sens=loss_scale) in its own loop; synthetic targets
built as its dataset does: y_true [N, grid, grid, 3, 85] per scale (object cells with
normalized x, y, w, h, objectness and one-hot class) and gt_box [N, max_box, 4]."""

import numpy as np
import synth

PROJECT = "official/cv/YOLOv3"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
STUBS = ["pycocotools"]  # COCO evaluation only (src/util.py)
SIZE = 64


def imports(p):
    from model_utils.config import config

    config.backbone_layers = [1, 1, 1, 1, 1]  # a list: not a command-line option
    from src import initializer, lr_scheduler, util, yolo

    p.config, p.yolo, p.init, p.util, p.lr = config, yolo, initializer, util, lr_scheduler


def network(p):
    # the training form (grid, raw prediction, box xy, box wh per scale): the one trained
    return p.yolo.YOLOV3DarkNet53(is_training=True)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def targets(cfg, batch=2):
    """y_true per scale (big objects on the coarsest grid, as the loss pairs them) and gt_box."""
    rng = np.random.default_rng(3)
    grids = [SIZE // 32, SIZE // 16, SIZE // 8]
    attrib = 5 + cfg.num_classes
    y_true = [np.zeros((batch, g, g, 3, attrib), "float32") for g in grids]
    gt = [np.zeros((batch, cfg.max_box, 4), "float32") for _ in grids]
    for b in range(batch):
        for k in range(3):
            scale, anchor = k % 3, int(rng.integers(0, 3))
            x, y = rng.uniform(0.1, 0.9, 2)
            w, h = rng.uniform(0.1, 0.5, 2) * (1.0 + (2 - scale) * 0.5) / 2.0
            g = grids[scale]
            gy, gx = int(y * g), int(x * g)
            y_true[scale][b, gy, gx, anchor, :4] = (x, y, w, h)
            y_true[scale][b, gy, gx, anchor, 4] = 1.0
            y_true[scale][b, gy, gx, anchor, 5 + int(rng.integers(0, cfg.num_classes))] = 1.0
            gt[scale][b, k] = (x, y, w, h)
    return y_true, gt


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    network_ = network(p)
    p.init.default_recurisive_init(network_)
    net = p.yolo.YoloWithLossCell(network_)
    cfg.steps_per_epoch, cfg.lr_epochs = steps, [220, 250]
    lr = p.lr.get_lr(cfg)
    opt = nn.Momentum(
        params=p.util.get_param_groups(net),
        momentum=cfg.momentum,
        learning_rate=ms.Tensor(lr),
        weight_decay=cfg.weight_decay,
        loss_scale=cfg.loss_scale,
    )
    net = nn.TrainOneStepCell(net, opt, sens=cfg.loss_scale)
    net.set_train()
    y_true, gt = targets(cfg)
    batch = [ms.Tensor.from_numpy(a) for a in (synth.array((2, 3, SIZE, SIZE)), *y_true, *gt)]
    losses = [synth.scalar(net(*batch)) for _ in range(steps)]
    p.trained = network_
    return losses
