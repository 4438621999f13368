"""official/cv/SwinTransformer: a tiny Swin (2 stages, window 4, 32x32 images) built by its
get_model, with train.py's wiring: cast_amp at amp_level O1 (to_float(float16), GELU / Softmax /
Conv2d / LayerNorm back to float32), SoftTargetCrossEntropy (the mixup criterion) in NetWithLoss,
AdamWeightDecay over its weight-decay groups with the cosine_lr per-step list, the project's
TrainOneStepWithLossScaleCell subclass (overflow check, clip_by_global_norm) with a
FixedLossScaleUpdateCell, and Model(train_cell, metrics, eval_network=WithEvalCell,
eval_indexes). Its set_device refuses CPU and its datasets need ImageNet: both are skipped."""

import numpy as np
import synth

PROJECT = "official/cv/SwinTransformer"
ARGV = [
    "--swin_config=src/configs/swin_tiny_patch4_window7_224.yaml",
    "--device_target=CPU",
    "--image_size=32",
    "--num_classes=10",
    "--batch-size=2",
    "--is_dynamic_loss_scale=0",  # 2**24 would overflow float16 for the first ~10 steps
]
EXPORT = True
TRAIN_PY = True
SIZE, CLASSES = 32, 10


def imports(p):
    from src.args import args
    from src.tools import cell, criterion, get_misc, optimizer

    args.embed_dim, args.depths, args.num_heads, args.window_size = 16, [1, 1], [1, 2], 4
    args.epochs, args.warmup_length = 1, 0
    args.base_lr = 0.5  # get_optimizer scales it by batch_size / 512: 2e-3 at batch 2
    p.args, p.cell, p.criterion, p.misc, p.optimizer = args, cell, criterion, get_misc, optimizer


def network(p):
    return p.misc.get_model(p.args)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    args = p.args
    net = network(p)
    p.cell.cast_amp(net)
    crit = p.criterion.get_criterion(args)
    net_with_loss = p.criterion.NetWithLoss(net, crit)
    opt = p.optimizer.get_optimizer(args, net, steps)
    train_cell = p.misc.get_train_one_step(args, net_with_loss, opt)
    eval_network = nn.WithEvalCell(net, crit, args.amp_level in ["O2", "O3", "auto"])
    model = ms.Model(
        train_cell, metrics={"acc", "loss"}, eval_network=eval_network, eval_indexes=[0, 1, 2]
    )
    labels = synth.array((2,), "int32", high=CLASSES)
    soft = np.full((2, CLASSES), 0.1 / CLASSES, np.float32)  # a mixup-style soft target
    soft[np.arange(2), labels] += 0.9
    data = synth.dataset({"image": synth.array((2, 3, SIZE, SIZE)), "label": soft}, steps)
    p.trained, p.model = net, model
    return synth.model_train(model, data)
