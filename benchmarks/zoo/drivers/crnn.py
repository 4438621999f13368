"""official/cv/CRNN: CRNN V2 (the CPU/GPU version) at 32x100, CTCLoss, SGD with the project's
cosine lr, WithLossCell + the project's TrainOneStepCellWithGradClip in Model(net_with_grads)
as train.py; labels int32 [N, 23] padded with the blank (36) as its dataset."""

import numpy as np
import synth

PROJECT = "official/cv/CRNN"
ARGV = [
    "--config_path=default_config.yaml",
    "--device_target=CPU",
    "--model_version=V2",
    "--batch_size=2",
]
EXPORT = True


def imports(p):
    from src import crnn, crnn_for_train, loss
    from src.model_utils import lr_scheduler
    from src.model_utils.config import config

    p.config, p.crnn, p.train_cell, p.loss, p.lr = config, crnn, crnn_for_train, loss, lr_scheduler


def network(p):
    return p.crnn.crnn(p.config, full_precision=True)


def inputs(p):
    c = p.config
    return synth.tensors(synth.array((2, 3, c.image_height, c.image_width)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    c = p.config
    lr = p.lr.cosine_decay_lr_with_start_step(0.0, c.learning_rate, 10 * steps, steps, 10, 0)
    loss = p.loss.CTCLoss(
        max_sequence_length=c.num_step, max_label_length=c.max_text_length, batch_size=c.batch_size
    )
    net = network(p)
    opt = nn.SGD(
        params=net.trainable_params(), learning_rate=lr, momentum=c.momentum, nesterov=c.nesterov
    )
    net_with_loss = nn.wrap.WithLossCell(net, loss)
    net_with_grads = p.train_cell.TrainOneStepCellWithGradClip(net_with_loss, opt).set_train()
    model = ms.Model(net_with_grads)
    label = np.full((2, c.max_text_length), c.blank, dtype="int32")
    label[:, :5] = synth.array((2, 5), "int32", high=c.class_num - 1)
    data = synth.dataset(
        {"image": synth.array((2, 3, c.image_height, c.image_width)), "label": label}, steps
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data)
