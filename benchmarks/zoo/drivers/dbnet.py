"""official/cv/DBNet: DBnet (ResNet-18 backbone in float16 via to_float, as train.py's
mix_precision, SegDetector with adaptive thresholds) at 64x64, L1BalanceCELoss (balanced BCE
with hard-negative mining through Sort/GatherNd, dice, masked L1), its WithLossCell and its
TrainOneStepCell (a TrainOneStepWithLossScaleCell subclass: FixedLossScaleUpdateCell(1024),
overflow check, force_update) in Model, Momentum over grouped params with order_params and
warmup_polydecay; synthetic maps in its loader's shapes (gt [N, 1, H, W], gt_mask, thresh_map,
thresh_mask [N, H, W])."""

import numpy as np
import synth

PROJECT = "official/cv/DBNet"
ARGV = [
    "--base_config_path=config/config_base.yaml",
    "--config_path=config/dbnet/config_resnet18_1p.yaml",
    "--device_target=CPU",
]
EXPORT = True
# data augmentation, label making and evaluation only (src/datasets, src/utils/metric.py)
STUBS = ["imgaug", "pyclipper", "shapely"]
SIZE = 64


def imports(p):
    import train  # the project's train.py: init_group_params
    from src.modules import loss, model
    from src.utils import learning_rate

    p.train, p.config, p.loss, p.model, p.lr = train, train.config, loss, model, learning_rate
    p.config.backbone.pretrained = False  # no ImageNet checkpoint here


def network(p):
    import jisu as ms

    net = p.model.get_dbnet(p.config.net, p.config, isTrain=True)
    if p.config.mix_precision:  # as train.py: the backbone in float16
        net.to_float(ms.float32)
        net.backbone.to_float(ms.float16)
    return net


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def maps(batch=2):
    """Text regions as its MakeSegDetectionData/MakeBorderMap give: binary gt with a kernel
    box per image, an all-care mask, a threshold map in [0.3, 0.7] around the boxes."""
    gt = np.zeros((batch, 1, SIZE, SIZE), "float32")
    gt[:, :, 16:40, 10:50] = 1.0
    gt_mask = np.ones((batch, SIZE, SIZE), "float32")
    thresh_mask = np.zeros((batch, SIZE, SIZE), "float32")
    thresh_mask[:, 10:46, 4:56] = 1.0
    thresh_map = np.full((batch, SIZE, SIZE), 0.3, "float32")
    thresh_map[:, 13:43, 7:53] = 0.5
    return gt, gt_mask, thresh_map, thresh_mask


def train(p, steps):
    import jisu as ms
    from jisu import nn

    c = p.config
    net = network(p)
    lr = ms.Tensor(
        p.lr.warmup_polydecay(
            base_lr=c.optimizer.lr.base_lr,
            target_lr=c.optimizer.lr.target_lr,
            warmup_epoch=c.optimizer.lr.warmup_epoch,
            total_epoch=c.train.total_epochs,
            start_epoch=c.optimizer.lr.warmup_epoch + 1,  # past the warmup (its first lr is 0)
            steps_pre_epoch=steps,
            factor=c.optimizer.lr.factor,
        )
    )
    opt = nn.Momentum(
        params=p.train.init_group_params(net, c.optimizer.weight_decay),
        learning_rate=lr,
        momentum=c.optimizer.momentum,
    )
    criterion = p.loss.L1BalanceCELoss(
        eps=c.loss.eps,
        l1_scale=c.loss.l1_scale,
        bce_scale=c.loss.bce_scale,
        bce_replace=c.loss.bce_replace,
    )
    net_with_loss = p.model.WithLossCell(net, criterion)
    train_net = p.model.TrainOneStepCell(
        net_with_loss,
        optimizer=opt,
        scale_sense=nn.FixedLossScaleUpdateCell(1024.0),
        clip_grad=c.train.clip_grad,
        force_update=c.train.force_update,
    )
    gt, gt_mask, thresh_map, thresh_mask = maps()
    data = synth.dataset(
        {
            "img": synth.array((2, 3, SIZE, SIZE)),
            "gts": gt,
            "gt_masks": gt_mask,
            "thresh_maps": thresh_map,
            "thresh_masks": thresh_mask,
        },
        steps,
    )
    model = ms.Model(train_net)
    p.trained, p.model_ = net, model
    return synth.model_train(model, data)
