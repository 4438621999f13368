"""The whole article (../shared/reference), ported to jisu.

The data pipeline is the article's with only the imports changed (``mindspore`` -> ``jisu``),
and one addition to its data. The article's labels (``i % 10``) have nothing to do with its
random images, so there is nothing to learn: the loss cannot fall, and with the article's SGD
settings it rises (2.4 -> 12.7 over two epochs), which reads as divergence. So by default each
image also carries its label: a white band across the rows ``label/10 .. (label+1)/10`` of its
height; the loss then falls. ``--article-data`` runs the article's data exactly (random labels).

The learning rate differs from the article's 0.01 too. ``SimpleNet`` is one linear layer over
64 * side^2 features (65,536 at 32x32, 3.2M at 224x224), and a step of 0.01 on that many inputs
overshoots: the first steps' loss jumps far up before it falls. The default is 0.001 at 32x32,
scaled down as the layer widens (``--lr`` sets it).

The network is the article's ``SimpleNet`` as the article wrote it, a ``jisu.nn.Cell`` (a
torch module whose ``forward`` calls ``construct``), with its loss
(``nn.SoftmaxCrossEntropyWithLogits``) and optimizer (``nn.Momentum`` over
``net.trainable_params()``). One size is corrected: MindSpore's ``Conv2d`` pads "same" by
default, so the convolution keeps the image's side and the article's ``64 * 222 * 222`` ("a
simplified size computation") would not match (MindSpore raises there too).
``Model(..., amp_level="O2")``, ``TimeMonitor``/``LossMonitor`` and ``dataset_sink_mode=True``
are as in the article, and so is the functional ``auto_mixed_precision`` + ``forward_fn``
part, finished with ``value_and_grad`` as the article says.

The article's images are 224x224 (a 3.2M-input linear layer); by default this runs them at
32x32 so that it finishes in seconds on a CPU. ``--article-sizes`` runs the original sizes.

Run: python examples/seed_article.py [--size 32] [--samples 1024] [--article-sizes]
     [--article-data]
"""

import argparse

import numpy as np

import jisu as ms
import jisu.dataset as ds
import jisu.dataset.transforms as transforms
import jisu.dataset.vision as vision
from jisu import Model, amp, nn
from jisu.train.callback import LossMonitor, TimeMonitor


def create_dataset(
    num_samples=10000, batch_size=32, rank_size=1, rank_id=0, image_size=224, learnable=True
):
    """
    创建一个高效的虚拟数据集流水线

    ``learnable`` (not in the article): draw each image's label into it, as a white band
    across rows ``label * image_size // 10`` .. ``(label + 1) * image_size // 10``, so that
    the network has something to learn (the article's labels are unrelated to its images).
    """

    # 模拟数据生成
    def generator_func():
        for i in range(num_samples):
            # 模拟一张 224x224 的3通道图片 和 一个标签
            image = np.random.uniform(0, 255, (image_size, image_size, 3)).astype(np.float32)
            label = np.array(i % 10).astype(np.int32)
            if learnable:  # the label, drawn into the image (see the docstring)
                top, bottom = int(label) * image_size // 10, (int(label) + 1) * image_size // 10
                image[top:bottom] = 255.0
            yield image, label

    # 1. 初始化Dataset
    # num_parallel_workers: 设置并行工作线程数，通常设置为CPU核数/卡数
    dataset = ds.GeneratorDataset(
        source=generator_func, column_names=["image", "label"], num_parallel_workers=4, shuffle=True
    )

    # 2. 定义数据增强操作 (在C++层执行，速度极快)
    # HWC -> CHW, 归一化等
    trans = [vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()]
    type_cast_op = transforms.TypeCast(ms.int32)

    # 3. 映射操作 (并行化核心)
    # python_multiprocessing=False: 建议设为False，利用C++层多线程，减少GIL锁影响
    dataset = dataset.map(operations=trans, input_columns="image", num_parallel_workers=4)
    dataset = dataset.map(operations=type_cast_op, input_columns="label", num_parallel_workers=4)

    # 4. Batch与Prefech
    dataset = dataset.batch(batch_size, drop_remainder=True)

    return dataset


class SimpleNet(nn.Cell):
    """The article's network (section 3.1)."""

    def __init__(self, image_size=224):
        super(SimpleNet, self).__init__()  # noqa: UP008 (as the article writes it)
        self.conv = nn.Conv2d(3, 64, 3)
        self.bn = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        # the article: 64 * 222 * 222; pad_mode "same" (the default) keeps the side
        self.fc = nn.Dense(64 * image_size * image_size, 10)

    def construct(self, x):
        x = self.conv(x)
        x = self.bn(x)
        x = self.relu(x)
        x = self.flatten(x)
        out = self.fc(x)
        return out


def default_lr(image_size):
    """0.001 at 32x32, inversely to the linear layer's width (see the module docstring)."""
    return 0.001 * 32**2 / image_size**2


def train_with_model(ds_train, image_size, epochs=2, lr=None):
    """Section 3.1, way one, and section 4: Model with amp_level="O2", monitors, sink mode."""
    net = SimpleNet(image_size)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    lr = default_lr(image_size) if lr is None else lr  # the article: 0.01
    opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)

    # 核心代码：amp_level="O2"
    model = Model(net, loss_fn=loss, optimizer=opt, amp_level="O2")
    print("模型已配置为 O2 混合精度模式")

    time_cb = TimeMonitor(data_size=ds_train.get_dataset_size())
    loss_cb = LossMonitor()
    print("开始训练...")
    model.train(
        epoch=epochs, train_dataset=ds_train, callbacks=[time_cb, loss_cb], dataset_sink_mode=True
    )
    return model


def train_functional(ds_train, image_size, steps=3, lr=None):
    """Section 3.1, way two: auto_mixed_precision and a forward_fn, in a custom loop."""
    net = SimpleNet(image_size)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    lr = default_lr(image_size) if lr is None else lr
    opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)
    net = amp.auto_mixed_precision(net, amp_level="O2")

    def forward_fn(data, label):
        logits = net(data)
        loss_value = loss(logits, label)
        return loss_value, logits

    # 后续结合 value_and_grad 使用: the gradients of the loss, then the optimizer's step
    grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters, has_aux=True)
    losses = []
    for step, (data, label) in enumerate(ds_train.create_tuple_iterator(num_epochs=1)):
        if step == steps:
            break
        (loss_value, _), grads = grad_fn(data, label)
        opt(grads)
        losses.append(float(loss_value))
    return losses


def main(argv=None):
    parser = argparse.ArgumentParser(description="The article's recipe on jisu")
    parser.add_argument("--size", type=int, default=32, help="image side (the article: 224)")
    parser.add_argument("--samples", type=int, default=1024, help="the article: 10000")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--lr", type=float, default=None, help="the article: 0.01 (default: 0.001 at 32x32)"
    )
    parser.add_argument("--article-sizes", action="store_true", help="224x224, 10000 samples")
    parser.add_argument(
        "--article-data",
        action="store_true",
        help="the article's random images and unrelated labels: nothing to learn, so the "
        "loss does not fall",
    )
    args = parser.parse_args(argv)
    size, samples = (224, 10000) if args.article_sizes else (args.size, args.samples)

    # 实例化
    ds_train = create_dataset(num_samples=samples, image_size=size, learnable=not args.article_data)
    print(f"Dataset size: {ds_train.get_dataset_size()}")
    if args.article_data:
        print("random labels (the article's data): nothing to learn, the loss will not fall")
    train_with_model(ds_train, size, args.epochs, args.lr)
    losses = train_functional(ds_train, size, lr=args.lr)
    print(f"functional loop (auto_mixed_precision + forward_fn): losses {losses}")


if __name__ == "__main__":
    main()
