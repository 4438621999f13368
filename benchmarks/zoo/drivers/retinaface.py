"""official/cv/RetinaFace_ResNet50: RetinaFace (ResNet-50, FPN, SSH context modules, class/box/
landmark heads) at 64x64 (168 priors), MultiBoxLoss (hard-negative mining by TopK, GatherNd,
SmoothL1 on boxes and landmarks), RetinaFaceWithLossCell + TrainingWrapper (GradOperation
with sens) with SGD over its dynamic lr in Model(net), as train.py; synthetic matched targets
as bbox_encode gives (loc_t [N, A, 4], conf_t int32 in {-1, 0, 1}, landm_t [N, A, 10])."""

import numpy as np
import synth

PROJECT = "official/cv/RetinaFace_ResNet50"
ARGV = []
EXPORT = True
TRAIN_PY = False
SIZE = 64
ANCHORS = 2 * sum((SIZE // s) ** 2 for s in (8, 16, 32))


def imports(p):
    from src import loss, lr_schedule, network
    from src.config import cfg_res50

    cfg_res50.update(image_size=SIZE, num_anchor=ANCHORS, batch_size=2, warmup_epoch=0)
    p.cfg, p.net, p.loss, p.lr = cfg_res50, network, loss, lr_schedule


def network(p):
    return p.net.RetinaFace(phase="train", backbone=p.net.resnet50(1001))


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def targets(batch=2):
    rng = np.random.default_rng(7)
    conf = np.zeros((batch, ANCHORS), "int32")
    conf[:, rng.choice(ANCHORS, 12, replace=False)] = 1
    conf[:, :2] = -1  # faces without landmarks
    loc = (rng.standard_normal((batch, ANCHORS, 4)) * 0.5).astype("float32")
    landm = (rng.standard_normal((batch, ANCHORS, 10)) * 0.5).astype("float32")
    return loc, conf, landm


def train(p, steps):
    import jisu as ms

    cfg = p.cfg
    backbone = p.net.resnet50(1001)
    backbone.set_train(True)
    net = p.net.RetinaFace(phase="train", backbone=backbone)
    net.set_train(True)
    multibox = p.loss.MultiBoxLoss(2, cfg["num_anchor"], 7, cfg["batch_size"])
    train_net = p.net.RetinaFaceWithLossCell(net, multibox, cfg)
    lr = p.lr.adjust_learning_rate(
        cfg["initial_lr"],
        cfg["gamma"],
        (cfg["decay1"], cfg["decay2"]),
        steps,
        cfg["epoch"],
        warmup_epoch=cfg["warmup_epoch"],
    )
    opt = ms.nn.SGD(
        params=train_net.trainable_params(),
        learning_rate=lr,
        momentum=cfg["momentum"],
        weight_decay=cfg["weight_decay"],
        loss_scale=1,
    )
    train_net = p.net.TrainingWrapper(train_net, opt)
    loc, conf, landm = targets()
    data = synth.dataset(
        {"image": synth.array((2, 3, SIZE, SIZE)), "truths": loc, "conf": conf, "landm": landm},
        steps,
    )
    model = ms.Model(train_net)
    p.trained, p.model = net, model
    return synth.model_train(model, data)
