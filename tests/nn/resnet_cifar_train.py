"""The model zoo's ResNet training on CIFAR-10 (``official/cv/ResNet``: ``train.py`` with
``src/dataset.py``'s CIFAR pipeline, ``src/lr_generator.py``'s warm-up + cosine rates,
``src/util.py``'s parameter groups, ``src/callback.py``'s loss and eval callbacks), written
against MindSpore's API with only the imports pointing at jisu. What the model zoo reads
from its YAML config is a :class:`Config` here; the script follows its GPU branch
(``loss_scale_manager`` + ``amp_level``, sink mode).
"""

import math
import os
import time
from dataclasses import dataclass

import numpy as np

import jisu as ms
import jisu.dataset as ds
import jisu.dataset.transforms.c_transforms as C2
import jisu.dataset.vision.c_transforms as C
import jisu.nn as nn
from jisu import save_checkpoint
from jisu.train.callback import Callback, CheckpointConfig, ModelCheckpoint


@dataclass
class Config:
    data_path: str
    eval_dataset_path: str
    save_ckpt_dir: str
    net_name: str = "resnet50"
    class_num: int = 10
    batch_size: int = 8
    train_image_size: int = 32
    epoch_size: int = 2
    warmup_epochs: int = 1
    lr_init: float = 0.01
    lr_end: float = 0.0001
    lr_max: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    loss_scale: int = 1024
    amp_level: str = "O2"
    keep_checkpoint_max: int = 2
    dataset_sink_mode: bool = True
    width: float = 0.125  # the test's narrow ResNet-50; 1.0 is the model zoo's


def create_dataset1(dataset_path, do_train, batch_size=32, train_image_size=224):
    """The model zoo's CIFAR-10 pipeline: crop with 4-pixel padding and flip when training,
    resize, rescale, normalize, HWC2CHW; int32 labels; batches without a remainder."""
    data_set = ds.Cifar10Dataset(dataset_path, num_parallel_workers=2, shuffle=do_train)
    trans = []
    if do_train:
        trans += [C.RandomCrop((32, 32), (4, 4, 4, 4)), C.RandomHorizontalFlip(prob=0.5)]
    trans += [
        C.Resize((train_image_size, train_image_size)),
        C.Rescale(1.0 / 255.0, 0.0),
        C.Normalize([0.4914, 0.4822, 0.4465], [0.2023, 0.1994, 0.2010]),
        C.HWC2CHW(),
    ]
    type_cast_op = C2.TypeCast(ms.int32)
    data_set = data_set.map(operations=type_cast_op, input_columns="label", num_parallel_workers=2)
    data_set = data_set.map(operations=trans, input_columns="image", num_parallel_workers=2)
    return data_set.batch(batch_size, drop_remainder=True)


def get_lr(lr_init, lr_end, lr_max, warmup_epochs, total_epochs, steps_per_epoch):
    """Linear warm-up to ``lr_max``, then cosine decay to ``lr_end``: one rate per step."""
    total_steps = steps_per_epoch * total_epochs
    warmup_steps = steps_per_epoch * warmup_epochs
    lr_each_step = []
    for i in range(total_steps):
        if i < warmup_steps:
            lr = lr_init + (lr_max - lr_init) * i / warmup_steps
        else:
            progress = (i - warmup_steps) / max(1, total_steps - warmup_steps)
            lr = lr_end + (lr_max - lr_end) * 0.5 * (1 + math.cos(math.pi * progress))
        lr_each_step.append(lr)
    return np.array(lr_each_step).astype(np.float32)


def init_group_params(net, cfg):
    decayed_params = []
    no_decayed_params = []
    for param in net.trainable_params():
        if "beta" not in param.name and "gamma" not in param.name and "bias" not in param.name:
            decayed_params.append(param)
        else:
            no_decayed_params.append(param)
    return [
        {"params": decayed_params, "weight_decay": cfg.weight_decay},
        {"params": no_decayed_params},
        {"order_params": net.trainable_params()},
    ]


class LossCallBack(Callback):
    """Logs the loss every ``per_print_time`` steps; stops on a NaN/Inf loss."""

    def __init__(self, epoch_size, lr, per_print_time=1):
        super().__init__()
        self.epoch_size, self.lr, self.per_print_time = epoch_size, lr, per_print_time
        self.global_steps = 0
        self.log = []
        self.step_start_time = time.time()

    def on_train_step_end(self, run_context):
        cb_params = run_context.original_args()
        loss = cb_params.net_outputs
        if isinstance(loss, (tuple, list)) and isinstance(loss[0], ms.Tensor):
            loss = loss[0]
        if isinstance(loss, ms.Tensor) and isinstance(loss.asnumpy(), np.ndarray):
            loss = np.mean(loss.asnumpy())
        cur_step_in_epoch = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1
        if isinstance(loss, float) and (np.isnan(loss) or np.isinf(loss)):
            raise ValueError(
                f"epoch: {cb_params.cur_epoch_num} step: {cur_step_in_epoch}. "
                "Invalid loss, terminating training."
            )
        if cur_step_in_epoch % self.per_print_time == 0:
            self.log.append(
                (cb_params.cur_epoch_num, cur_step_in_epoch, float(self.lr[self.global_steps]),
                 float(loss))
            )  # fmt: skip
        self.global_steps += 1


class EvalCallBack(Callback):
    """Evaluates every epoch and saves the best network (``save_checkpoint`` of the
    callback's ``train_network``)."""

    def __init__(self, model, eval_dataset, ckpt_directory, metrics_name="acc"):
        super().__init__()
        self.model, self.eval_dataset, self.metrics_name = model, eval_dataset, metrics_name
        self.best_res, self.results = 0, []
        os.makedirs(ckpt_directory, exist_ok=True)
        self.best_ckpt_path = os.path.join(ckpt_directory, "best_acc.ckpt")

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        res = self.model.eval(self.eval_dataset)[self.metrics_name]
        self.results.append((cb_params.cur_epoch_num, res))
        if res >= self.best_res:
            self.best_res = res
            if os.path.exists(self.best_ckpt_path):
                os.remove(self.best_ckpt_path)
            save_checkpoint(cb_params.train_network, self.best_ckpt_path)


def train_net(config, resnet):
    """The model zoo's ``train_net`` for the GPU target; returns what the test checks."""
    ms.set_seed(1)
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU", save_graphs=False)
    dataset = create_dataset1(config.data_path, True, config.batch_size, config.train_image_size)
    step_size = dataset.get_dataset_size()
    net = resnet(class_num=config.class_num)
    lr = ms.Tensor(
        get_lr(config.lr_init, config.lr_end, config.lr_max, config.warmup_epochs,
               config.epoch_size, step_size)
    )  # fmt: skip
    group_params = init_group_params(net, config)
    opt = nn.Momentum(group_params, lr, config.momentum, loss_scale=config.loss_scale)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    loss_scale = ms.FixedLossScaleManager(config.loss_scale, drop_overflow_update=False)
    model = ms.Model(
        net, loss_fn=loss, optimizer=opt, loss_scale_manager=loss_scale, metrics={"acc"},
        amp_level=config.amp_level, keep_batchnorm_fp32=False,
    )  # fmt: skip
    loss_cb = LossCallBack(config.epoch_size, lr)
    config_ck = CheckpointConfig(
        save_checkpoint_steps=step_size,
        keep_checkpoint_max=config.keep_checkpoint_max,
        append_info=[{"epoch_num": 0, "step_num": 0}],
    )
    ckpt_cb = ModelCheckpoint(
        prefix=config.net_name, directory=config.save_ckpt_dir, config=config_ck
    )
    eval_dataset = create_dataset1(
        config.eval_dataset_path, False, config.batch_size, config.train_image_size
    )
    eval_cb = EvalCallBack(model, eval_dataset, config.save_ckpt_dir)
    model.train(
        config.epoch_size, dataset, callbacks=[loss_cb, ckpt_cb, eval_cb],
        sink_size=dataset.get_dataset_size(), dataset_sink_mode=config.dataset_sink_mode,
    )  # fmt: skip
    return net, opt, loss_cb, eval_cb
