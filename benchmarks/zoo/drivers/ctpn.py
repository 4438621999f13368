"""official/cv/CTPN: CTPN (VGG16 features, BiLSTM over feature rows, RPN with vertical anchors,
BoundingBoxEncode/Decode, assigner and sampler, proposal NMS) at 64x128, WithLossCell + LossNet
and network_define.TrainOneStepCell (GradOperation with sens) with Momentum(loss_scale) over
dynamic_lr in Model(net), as train.py (pretraining task); synthetic padded text boxes as its
dataset gives (box [N, num_gts, 4], label int32, valid_num bool, image_shape [N, 3])."""

import numpy as np
import synth

PROJECT = "official/cv/CTPN"
H, W = 64, 128
ARGV = [
    "--config_path=default_config.yaml",
    "--device_target=CPU",
    f"--img_height={H}",
    f"--img_width={W}",
    "--num_gts=16",
    "--num_expected_pos=32",
    "--num_expected_neg=64",
    "--rpn_proposal_nms_pre=200",  # top-k over 448 anchors, not 2000
    "--rpn_proposal_nms_post=100",
    "--rpn_proposal_max_num=100",
    "--rpn_nms_pre=200",  # the same at inference
    "--rpn_nms_post=100",
    "--rpn_max_num=100",
    "--test_max_per_img=100",
]
EXPORT = True
TRAIN_PY = False  # its config mutations are repeated in imports()


def imports(p):
    from src import lr_schedule, network_define
    from src.ctpn import CTPN
    from src.model_utils.config import config

    c = config  # as train.train() derives them
    c.feature_shapes = [c.img_height // 16, c.img_width // 16]
    c.num_bboxes = (c.img_height // 16) * (c.img_width // 16) * c.num_anchors
    c.num_step = c.img_width // 16
    c.rnn_batch_size = c.img_height // 16
    c.weight_decay = float(c.weight_decay)
    c.base_lr, c.warmup_step = c.pre_base_lr, 0
    c.warmup_ratio, c.total_epoch = float(eval(str(c.pre_warmup_ratio))), c.pre_total_epoch
    p.config, p.nd, p.CTPN, p.lr = c, network_define, CTPN, lr_schedule


def network(p):
    return p.CTPN(config=p.config, batch_size=p.config.batch_size)


def annotations(cfg, batch=1):
    """Text-line pieces 16 pixels wide, as the dataset splits text lines."""
    boxes = np.zeros((batch, cfg.num_gts, 4), "float32")
    labels = np.zeros((batch, cfg.num_gts), "int32")
    valid = np.zeros((batch, cfg.num_gts), "bool")
    for k in range(5):
        boxes[:, k] = (16 * (k + 1), 20, 16 * (k + 2) - 1, 40)
        labels[:, k], valid[:, k] = 1, True
    shape = np.tile(np.array([[H, W, 1.0]], "float32"), (batch, 1))
    return boxes, labels, valid, shape


def inputs(p):
    return synth.tensors(synth.array((1, 3, H, W)), *annotations(p.config))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    net = network(p).set_train()
    lr = ms.Tensor(p.lr.dynamic_lr(cfg, steps), ms.float32)
    opt = nn.Momentum(
        params=net.trainable_params(),
        learning_rate=lr,
        momentum=cfg.momentum,
        weight_decay=cfg.weight_decay,
        loss_scale=cfg.loss_scale,
    )
    net_with_loss = p.nd.WithLossCell(net, p.nd.LossNet())
    net_with_grads = p.nd.TrainOneStepCell(net_with_loss, opt, sens=cfg.loss_scale)
    boxes, labels, valid, shape = annotations(cfg)
    data = synth.dataset(
        {
            "image": synth.array((1, 3, H, W)),
            "box": boxes,
            "label": labels,
            "valid_num": valid,
            "image_shape": shape,
        },
        steps,
    )
    model = ms.Model(net_with_grads)
    p.trained, p.model = net, model
    return synth.model_train(model, data)
