"""MindSpore's LeNet tutorial (the quick start on MNIST, ``context.set_context`` + ``nn.Cell``
LeNet5 + ``MnistDataset`` + ``SoftmaxCrossEntropyWithLogits`` + ``Momentum`` +
``ModelCheckpoint``/``CheckpointConfig`` + ``Model(..., metrics={"Accuracy": Accuracy()})``)
with only its imports changed from ``mindspore`` to ``jisu``. Two things are parameters here
that the tutorial hard-codes: the data folder and the checkpoint to load (its name holds the
step count, 1875 for MNIST's 60,000 images in batches of 32).
"""

import os

import jisu.dataset as ds
import jisu.dataset.transforms.c_transforms as C
import jisu.dataset.vision.c_transforms as CV
import jisu.nn as nn
from jisu import Model, context, load_checkpoint, load_param_into_net
from jisu import dtype as mstype
from jisu.common.initializer import Normal
from jisu.dataset.vision import Inter
from jisu.nn.metrics import Accuracy
from jisu.train.callback import CheckpointConfig, LossMonitor, ModelCheckpoint


def create_dataset(data_path, batch_size=32, repeat_size=1, num_parallel_workers=1):
    mnist_ds = ds.MnistDataset(data_path)
    resize_height, resize_width = 32, 32
    rescale = 1.0 / 255.0
    shift = 0.0
    rescale_nml = 1 / 0.3081
    shift_nml = -1 * 0.1307 / 0.3081

    resize_op = CV.Resize((resize_height, resize_width), interpolation=Inter.LINEAR)
    rescale_nml_op = CV.Rescale(rescale_nml, shift_nml)
    rescale_op = CV.Rescale(rescale, shift)
    hwc2chw_op = CV.HWC2CHW()
    type_cast_op = C.TypeCast(mstype.int32)

    mnist_ds = mnist_ds.map(
        operations=type_cast_op, input_columns="label", num_parallel_workers=num_parallel_workers
    )
    mnist_ds = mnist_ds.map(
        operations=resize_op, input_columns="image", num_parallel_workers=num_parallel_workers
    )
    mnist_ds = mnist_ds.map(
        operations=rescale_op, input_columns="image", num_parallel_workers=num_parallel_workers
    )
    mnist_ds = mnist_ds.map(
        operations=rescale_nml_op, input_columns="image", num_parallel_workers=num_parallel_workers
    )
    mnist_ds = mnist_ds.map(
        operations=hwc2chw_op, input_columns="image", num_parallel_workers=num_parallel_workers
    )

    buffer_size = 10000
    mnist_ds = mnist_ds.shuffle(buffer_size=buffer_size)
    mnist_ds = mnist_ds.batch(batch_size, drop_remainder=True)
    mnist_ds = mnist_ds.repeat(repeat_size)
    return mnist_ds


class LeNet5(nn.Cell):
    def __init__(self, num_class=10, num_channel=1):
        super(LeNet5, self).__init__()  # noqa: UP008 (as the tutorial writes it)
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=Normal(0.02))
        self.fc2 = nn.Dense(120, 84, weight_init=Normal(0.02))
        self.fc3 = nn.Dense(84, num_class, weight_init=Normal(0.02))
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def train_net(model, epoch_size, data_path, repeat_size, ckpoint_cb, sink_mode):
    ds_train = create_dataset(os.path.join(data_path, "train"), 32, repeat_size)
    model.train(
        epoch_size, ds_train, callbacks=[ckpoint_cb, LossMonitor(125)], dataset_sink_mode=sink_mode
    )


def test_net(network, model, data_path, ckpt_path):
    param_dict = load_checkpoint(ckpt_path)
    load_param_into_net(network, param_dict)
    ds_eval = create_dataset(os.path.join(data_path, "test"))
    acc = model.eval(ds_eval, dataset_sink_mode=False)
    print("============== Accuracy:{} ==============".format(acc))  # noqa: UP032
    return acc


def main(data_path, ckpt_dir, mode=context.GRAPH_MODE, epoch_size=1, sink_mode=True):
    context.set_context(mode=mode, device_target="CPU")
    lr = 0.01
    momentum = 0.9
    repeat_size = 1
    network = LeNet5()
    net_loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    net_opt = nn.Momentum(network.trainable_params(), lr, momentum)
    steps = create_dataset(os.path.join(data_path, "train")).get_dataset_size()
    config_ck = CheckpointConfig(save_checkpoint_steps=steps, keep_checkpoint_max=10)
    ckpoint_cb = ModelCheckpoint(prefix="checkpoint_lenet", directory=ckpt_dir, config=config_ck)
    model = Model(network, net_loss, net_opt, metrics={"Accuracy": Accuracy()})
    train_net(model, epoch_size, data_path, repeat_size, ckpoint_cb, sink_mode)
    ckpt = os.path.join(ckpt_dir, f"checkpoint_lenet-{epoch_size}_{steps}.ckpt")
    return test_net(network, model, data_path, ckpt)
