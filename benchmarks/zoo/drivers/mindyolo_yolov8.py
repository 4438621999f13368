"""mindyolo (mindspore-lab/mindyolo): YOLOv8n (anchor-free, DFL head; YOLOv8Loss with its
task-aligned assigner) from configs/yolov8/yolov8n.yaml at 64x64 through
train.py's own steps: parse_args(get_parser_train()), create_model, create_loss (YOLOv8Loss),
create_lr_scheduler / create_group_param / create_optimizer, get_loss_scaler and
create_train_step_fn (ops.value_and_grad, all_finite, the optimizer called with the gradients),
called in a loop as mindyolo's trainer does; targets [N, 160, 6] (image, class, x, y, w, h),
padding rows with class -1, as its COCODataset. Its losses stay finite but need more than 6
steps to fall (the task-aligned assigner re-targets from the predictions each step).

One porting edit (what a user porting the project does): parse_model counts parameters with
``sum([x.size for x in m_.get_parameters()])``, MindSpore's ``Tensor.size`` being the element
count as a property while torch's ``size`` is a method; get_parameters() also yields the norm
layers' moving statistics (torch buffers, plain tensors), so no Parameter-only change in jisu
covers it: ``x.size`` -> ``x.numel()`` in the copy. And YOLOv8Loss's assigner takes
``x.max(-2)``: MindSpore's positional ``max(axis)`` gives the values, torch's (kept by jisu)
``(values, indices)``: ``x.max(axis=2)`` in the copy."""

import re

import numpy as np
import synth

REPO = "mindspore-lab+mindyolo"
PROJECT = "mindyolo"
ALSO = ["train.py", "configs"]
PATHS = [".."]
ARGV = [
    "--config=../configs/yolov8/yolov8n.yaml",
    "--device_target=CPU",
    "--ms_jit=False",
    "--ms_amp_level=O0",
    "--img_size=64",
]
EXPORT = True
STUBS = ["pkg_resources"]  # a version check in its albumentations wrapper (data only)
SIZE, BOXES, CLASSES = 64, 160, 80


def port_size(path):
    """MindSpore's ``param.size`` (element count) -> ``param.numel()`` in the copied file."""
    text = path.read_text()
    path.write_text(text.replace("x.size for x in", "x.numel() for x in"))


def port_max(path):
    """MindSpore's ``x.max(2)`` (the values) -> ``x.max(axis=2)`` in the copied file: jisu
    keeps torch's meaning of a positional ``max(dim)``, ``(values, indices)``."""
    text = path.read_text()
    path.write_text(re.sub(r"\.max\((-?\d)\)", r".max(axis=\1)", text))


def imports(p):
    port_size(p.dir / "models" / "model_factory.py")
    port_max(p.dir / "models" / "losses" / "yolov8_loss.py")
    import train
    from mindyolo.models import create_loss, create_model
    from mindyolo.optim import create_group_param, create_lr_scheduler, create_optimizer
    from mindyolo.utils.config import parse_args
    from mindyolo.utils.train_step_factory import create_train_step_fn, get_loss_scaler

    p.args = parse_args(train.get_parser_train())
    a = p.args  # what mindyolo.utils.utils.set_default derives, for one device, batch 2
    a.per_batch_size, a.rank, a.rank_size = 2, 0, 1
    a.total_batch_size = a.per_batch_size * a.rank_size
    a.optimizer.warmup_epochs = 0
    a.optimizer.min_warmup_step = 0
    a.optimizer.lr_init = 0.03  # 0.01 in hyp.scratch-low: too slow to show in 6 steps
    a.optimizer.epochs, a.optimizer.nbs = a.epochs, a.nbs
    a.optimizer.accumulate, a.optimizer.total_batch_size = a.accumulate, a.total_batch_size
    p.fns = (
        create_model,
        create_loss,
        create_lr_scheduler,
        create_group_param,
        create_optimizer,
        get_loss_scaler,
        create_train_step_fn,
    )


def network(p):
    a = p.args
    return p.fns[0](
        model_name=a.network.model_name, model_cfg=a.network, num_classes=a.data.nc, sync_bn=False
    )


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms
    from jisu import ops

    a = p.args
    _, create_loss, create_lr, create_group, create_opt, get_scaler, create_step = p.fns
    net = network(p)
    loss_fn = create_loss(
        **a.loss, anchors=a.network.get("anchors", 1), stride=a.network.stride, nc=a.data.nc
    )
    a.optimizer.steps_per_epoch = steps
    a.optimizer.epochs = a.epochs
    lr = create_lr(**a.optimizer)
    params = create_group(params=net.trainable_params(), **a.optimizer)
    optimizer = create_opt(params=params, lr=lr, **a.optimizer)
    scaler = get_scaler(a.ms_loss_scaler, scale_value=a.ms_loss_scaler_value)
    step = create_step(
        task="detect",
        network=net,
        loss_fn=loss_fn,
        optimizer=optimizer,
        loss_ratio=1,
        scaler=scaler,
        reducer=ops.functional.identity,
        ema=None,
        overflow_still_update=a.overflow_still_update,
        ms_jit=False,
        clip_grad=a.clip_grad,
        clip_grad_value=a.clip_grad_value,
    )
    labels = np.full((2, BOXES, 6), -1.0, np.float32)
    for img in range(2):
        labels[img, :3, 0] = img
        labels[img, :3, 1] = synth.array((3,), "float32", high=CLASSES, seed=img)
        labels[img, :3, 2:4] = 0.25 + 0.5 * np.abs(np.tanh(synth.array((3, 2), seed=10 + img)))
        labels[img, :3, 4:6] = 0.2 + 0.1 * np.abs(np.tanh(synth.array((3, 2), seed=20 + img)))
        # one large box per image: every output layer (strides 8, 16, 32) gets a target, else
        # that layer's box loss is 0 / 0 (the project divides by its target count)
        labels[img, 2, 2:6] = (0.5, 0.5, 0.8, 0.7)
    x, y = ms.Tensor(synth.array((2, 3, SIZE, SIZE))), ms.Tensor(labels)
    net.set_train(True)
    losses = []
    for _ in range(steps):
        loss, _items, _grads, _finite = step(x, y)
        losses.append(synth.scalar(loss))
    p.trained = net
    return losses
