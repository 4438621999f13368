"""official/cv/RetinaNet: retinanet50 (ResNet-50 + FPN, to_float(float16) heads) at 64x64
(feature sizes [8, 4, 2, 1, 1], 774 anchors), retinanetWithLossCell (sigmoid focal loss +
SmoothL1) + TrainingWrapper (GradOperation with sens = loss scale) and Momentum with loss_scale
in Model(net), as train.py; synthetic encoded targets in box_utils' shapes (loc [N, A, 4],
label [N, A] int32 mostly background, num_match [N, 1] int32)."""

import numpy as np
import synth

PROJECT = "official/cv/RetinaNet"
SIZE, FEATURES = 64, [8, 4, 2, 1, 1]
BOXES = 9 * sum(f * f for f in FEATURES)
ARGV = [
    "--config_path=config/default_config.yaml",
    "--device_target=CPU",
]
EXPORT = True
STUBS = ["pycocotools"]  # COCO evaluation only (src/coco_eval.py)


def imports(p):
    from src.model_utils.config import config

    config.img_shape, config.feature_size = [SIZE, SIZE], FEATURES  # lists: not CLI options
    config.num_retinanet_boxes = BOXES
    from src import init_params, lr_schedule, retinanet

    p.config, p.retinanet, p.lr, p.init = config, retinanet, lr_schedule, init_params


def network(p):
    r = p.retinanet
    return r.retinanet50(r.resnet50(p.config.num_classes), p.config)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import ast

    import jisu as ms
    from jisu import nn

    cfg = p.config
    retina = network(p)
    net = p.retinanet.retinanetWithLossCell(retina, cfg)
    p.init.init_net_param(net)
    lr = ms.Tensor(
        p.lr.get_lr(
            global_step=0,
            lr_init=ast.literal_eval(str(cfg.lr_init)),
            lr_end=ast.literal_eval(str(cfg.lr_end_rate)) * cfg.lr,
            lr_max=cfg.lr / 10,  # its 0.09 at step 0 (no warmup) diverges on one tiny batch
            warmup_epochs1=0,
            warmup_epochs2=0,
            warmup_epochs3=0,
            warmup_epochs4=0,
            warmup_epochs5=0,
            total_epochs=cfg.epoch_size,
            steps_per_epoch=steps,
        )
    )
    loss_scale = float(cfg.loss_scale)
    opt = nn.Momentum(
        filter(lambda x: x.requires_grad, net.get_parameters()),
        lr,
        cfg.momentum,
        cfg.weight_decay,
        loss_scale,
    )
    net = p.retinanet.TrainingWrapper(net, opt, loss_scale)
    label = synth.array((2, BOXES), "int32", high=cfg.num_classes)
    label[label % 8 != 0] = 0  # mostly background, as the encoder gives
    num_match = np.count_nonzero(label, axis=1).astype("int32").reshape(2, 1)
    data = synth.dataset(
        {
            "image": synth.array((2, 3, SIZE, SIZE)),
            "box": synth.array((2, BOXES, 4)) * 0.1,
            "label": label,
            "num_match": num_match,
        },
        steps,
    )
    model = ms.Model(net)
    p.trained, p.model = retina, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
