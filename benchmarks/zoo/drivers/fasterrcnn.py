"""official/cv/FasterRCNN: Faster_Rcnn (ResNet-50-v1.5 FPN with one block per stage, anchor
generator, RPN with BoundingBoxEncode/IOU assigner and random sampling, proposal NMS, RoIAlign
over FPN levels, RCNN head) at 128x128 from fasterrcnn_facemask_config_cpu.yaml (4 classes),
WithLossCell + LossNet and train.py's TrainOneStepCellCPU (GradOperation with a sens tensor)
with SGD over the dynamic_lr schedule in Model(net), as train.py on CPU; synthetic padded
annotations as its dataset gives: image_shape [N, 3] (h, w, scale), box [N, num_gts, 4]
pixel corners, label [N, num_gts] int32 in [1, classes), valid_num [N, num_gts] bool."""

import numpy as np
import synth

PROJECT = "official/cv/FasterRCNN"
SIZE = 128
ARGV = [
    "--config_path=fasterrcnn_facemask_config_cpu.yaml",
    "--device_target=CPU",
    f"--img_width={SIZE}",
    f"--img_height={SIZE}",
    "--test_batch_size=2",
    "--num_expected_pos_stage2=32",  # 128 sampled rois per image, not 512
    "--num_expected_neg_stage2=96",
    "--num_expected_total_stage2=128",
    "--roi_sample_num=128",
    "--rpn_max_num=100",  # proposals per image at inference, not 1000
]
EXPORT = True
STUBS = ["pycocotools"]  # COCO evaluation only
TRAIN_PY = False  # imported in imports(): TrainOneStepCellCPU lives there


def imports(p):
    import train  # the project's train.py: TrainOneStepCellCPU, config
    from src import lr_schedule, network_define
    from src.FasterRcnn import faster_rcnn

    p.train, p.config, p.nd, p.frcnn, p.lr = (
        train,
        train.config,
        network_define,
        faster_rcnn,
        lr_schedule,
    )
    p.config.resnet_block = [1, 1, 1, 1]  # a list: not a command-line option


def network(p):
    import jisu as ms
    from jisu.common.initializer import HeNormal, initializer

    net = p.frcnn.Faster_Rcnn(config=p.config)
    # train.py loads an ImageNet ResNet into the backbone (config.pre_trained); its own init
    # (constant 0.01 weights, frozen batch norms) makes 1e7-sized features: a He init stands in
    for cell in net.backbone.cells_and_names():
        if isinstance(cell[1], ms.nn.Conv2d):
            w = cell[1].weight
            w.set_data(initializer(HeNormal(), w.shape, w.dtype))
    return net


def annotations(cfg, batch=2):
    """The dataset's columns after its transpose_column: valid boxes first, then padding."""
    rng = np.random.default_rng(5)
    shape = np.tile(np.array([[SIZE, SIZE, 1.0]], "float32"), (batch, 1))
    boxes = np.zeros((batch, cfg.num_gts, 4), "float32")
    labels = np.zeros((batch, cfg.num_gts), "int32")
    valid = np.zeros((batch, cfg.num_gts), "bool")
    for b in range(batch):
        for k in range(3):
            x1, y1 = rng.uniform(0, SIZE * 0.6, 2)
            w, h = rng.uniform(SIZE * 0.15, SIZE * 0.4, 2)
            boxes[b, k] = (x1, y1, min(x1 + w, SIZE - 1), min(y1 + h, SIZE - 1))
            labels[b, k] = rng.integers(1, cfg.num_classes)
            valid[b, k] = True
    return shape, boxes, labels, valid


def inputs(p):
    # eval form: image metas (h, w, scale_h, scale_w), as rescale_column_test gives
    _, boxes, labels, valid = annotations(p.config)
    metas = np.tile(np.array([[SIZE, SIZE, 1.0, 1.0]], "float32"), (2, 1))
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)), metas, boxes, labels, valid)


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    ms.set_seed(1)  # train.py's __main__
    net = network(p)
    net = net.set_train()
    cfg.base_lr = cfg.base_lr / 8  # train.py: single card, base_lr is for 8
    loss = p.nd.LossNet()
    lr = ms.Tensor(p.lr.dynamic_lr(cfg, steps), ms.float32)
    opt = nn.SGD(
        params=net.trainable_params(),
        learning_rate=lr,
        momentum=cfg.momentum,
        weight_decay=cfg.weight_decay,
    )
    net_with_loss = p.nd.WithLossCell(net, loss)
    train_net = p.train.TrainOneStepCellCPU(net_with_loss, opt, sens=cfg.loss_scale)
    shape, boxes, labels, valid = annotations(cfg)
    data = synth.dataset(
        {
            "image": synth.array((2, 3, SIZE, SIZE)),
            "image_shape": shape,
            "box": boxes,
            "label": labels,
            "valid_num": valid,
        },
        steps,
    )
    model = ms.Model(train_net)
    p.trained, p.model = net, model
    return synth.model_train(model, data)
