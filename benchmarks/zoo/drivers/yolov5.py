"""official/cv/YOLOv5: YOLOV5 (yolov5s: Focus slicing of NHWC images, CSP backbone, PANet)
at 64x64, default_recurisive_init, YoloWithLossCell (GIoU, confidence and class losses per
scale), Momentum over get_param_groups with loss_scale, and train.py's
nn.TrainOneStepCell(network, opt, loss_scale // 2) in its own loop; synthetic targets as its
dataset builds them: y_true [N, grid, grid, 3, 85] per scale and gt_box [N, max_box, 4]."""

import numpy as np
import synth

PROJECT = "official/cv/YOLOv5"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
STUBS = ["pycocotools"]  # COCO evaluation only (src/util.py)
TRAIN_PY = False
SIZE = 64


def imports(p):
    from model_utils.config import config
    from src import initializer, lr_scheduler, util, yolo

    p.config, p.yolo, p.init, p.util, p.lr = config, yolo, initializer, util, lr_scheduler


def network(p):
    return p.yolo.YOLOV5(is_training=True, version=0)  # the trained (training-form) network


def image():
    return (np.abs(synth.array((2, SIZE, SIZE, 3))) * 60).astype("float32")  # NHWC, 0..255


def inputs(p):
    return synth.tensors(image(), np.array([SIZE, SIZE], "float32"))


def targets(cfg, batch=2):
    """y_true per scale (the coarsest grid first, as the loss pairs them) and gt_box."""
    rng = np.random.default_rng(3)
    grids = [SIZE // 32, SIZE // 16, SIZE // 8]
    attrib = 5 + cfg.num_classes
    y_true = [np.zeros((batch, g, g, 3, attrib), "float32") for g in grids]
    gt = [np.zeros((batch, cfg.max_box, 4), "float32") for _ in grids]
    for b in range(batch):
        for scale in range(3):
            anchor = int(rng.integers(0, 3))
            x, y = rng.uniform(0.1, 0.9, 2)
            w, h = rng.uniform(0.1, 0.5, 2) * (1.0 + (2 - scale) * 0.5) / 2.0
            g = grids[scale]
            gy, gx = int(y * g), int(x * g)
            y_true[scale][b, gy, gx, anchor, :4] = (x, y, w, h)
            y_true[scale][b, gy, gx, anchor, 4] = 1.0
            y_true[scale][b, gy, gx, anchor, 5 + int(rng.integers(0, cfg.num_classes))] = 1.0
            gt[scale][b, scale] = (x, y, w, h)
    return y_true, gt


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    network_ = network(p)
    p.init.default_recurisive_init(network_)
    net = p.yolo.YoloWithLossCell(network_)
    cfg.lr_epochs = [220, 250]
    lr = p.lr.get_lr(cfg, steps)
    opt = nn.Momentum(
        params=p.util.get_param_groups(net),
        momentum=cfg.momentum,
        learning_rate=ms.Tensor(lr),
        weight_decay=cfg.weight_decay,
        loss_scale=cfg.loss_scale,
    )
    net = nn.TrainOneStepCell(net, opt, cfg.loss_scale // 2)
    net.set_train()
    y_true, gt = targets(cfg)
    images = ms.Tensor.from_numpy(image())
    batch = [ms.Tensor.from_numpy(a) for a in (*y_true, *gt)]
    shape = ms.Tensor(images.shape[1:3], ms.float32)
    losses = [synth.scalar(net(images, *batch, shape)) for _ in range(steps)]
    p.trained = network_
    return losses
