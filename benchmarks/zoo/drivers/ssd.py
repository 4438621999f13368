"""official/cv/SSD: ssd300 (MobileNetV2 backbone) built by train.py's own ssd_model_build,
SSDWithLossCell + TrainingWrapper in Model(net) as train.py does; synthetic encoded boxes in
the shapes of box_utils.ssd_bboxes_encode (box [N, 1917, 4], label [N, 1917] int32,
num_match [N, 1] int32)."""

import numpy as np
import synth

PROJECT = "official/cv/SSD"
ARGV = ["--config_path=config/ssd300_config.yaml", "--device_target=CPU"]
EXPORT = True
STUBS = ["pycocotools"]  # COCO evaluation only (src/eval_utils.py)
TRAIN_PY = False  # imported in imports() itself: its ssd_model_build is the network


def imports(p):
    import train  # the project's train.py (set_seed, config, ssd_model_build)
    from src import lr_schedule, ssd

    p.train, p.ssd, p.lr, p.config = train, ssd, lr_schedule, train.config


def network(p):
    return p.train.ssd_model_build()


def inputs(p):
    return synth.tensors(synth.array((2, 3, 300, 300)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    ssd = network(p)
    net = p.ssd.SSDWithLossCell(ssd, cfg)
    lr = ms.Tensor(
        p.lr.get_lr(
            global_step=0,
            lr_init=cfg.lr_init,
            lr_end=cfg.lr_end_rate * cfg.lr,
            lr_max=cfg.lr,
            warmup_epochs=0,
            total_epochs=cfg.epoch_size,
            steps_per_epoch=steps,
        )
    )
    opt = nn.Momentum(
        filter(lambda x: x.requires_grad, net.get_parameters()),
        lr,
        cfg.momentum,
        cfg.weight_decay,
        1.0,
    )
    net = p.ssd.TrainingWrapper(net, opt, 1.0)
    boxes = cfg.num_ssd_boxes
    label = synth.array((2, boxes), "int32", high=cfg.num_classes)
    label[label % 4 != 0] = 0  # mostly background, as the encoder gives
    num_match = np.count_nonzero(label, axis=1).astype("int32").reshape(2, 1)
    data = synth.dataset(
        {
            "image": synth.array((2, 3, 300, 300)),
            "box": synth.array((2, boxes, 4)) * 0.1,
            "label": label,
            "num_match": num_match,
        },
        steps,
    )
    model = ms.Model(net)
    p.trained, p.model = ssd, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
