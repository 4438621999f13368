"""official/audio/EcapaTDNN: ECAPA_TDNN (channels 32, SE-Res2 blocks, attentive statistics
pooling) over 80-bin fbank frames, Classifier and AdditiveAngularMargin, train.py's
BuildTrainNetwork (it assigns the margin logits to a Parameter attribute), the cyclic-lr list,
Adam and the project's TrainOneStepWithLossScaleCellv2 (FloatStatus overflow check, gradient
unscale through MultitypeFuncGraph, ClipGradients) with FixedLossScaleUpdateCell(2**14), in
train_net's loop over a fixed batch of 2 x 40 frames."""

import synth

PROJECT = "official/audio/EcapaTDNN"
ARGV = [
    "--config_path=ecapa-tdnn_config.yaml",
    "--device_target=CPU",
    "--channels=32",
    "--emb_size=16",
    "--class_num=10",
    "--minibatch_size=2",
    "--step_size=4",
    "--max_lrate=0.001",
]
EXPORT = True
TRAIN_PY = False  # imported in imports(): BuildTrainNetwork lives there
FRAMES = 40


def imports(p):
    import train  # the project's train.py
    from src import ecapa_tdnn, loss_scale, util
    from src.model_utils.config import config

    p.train, p.hp, p.ecapa, p.loss_scale, p.util = train, config, ecapa_tdnn, loss_scale, util


def network(p):
    hp = p.hp
    c = hp.channels
    return p.ecapa.ECAPA_TDNN(hp.in_channels, channels=(c, c, c, c, c * 3), lin_neurons=hp.emb_size)


def inputs(p):
    return synth.tensors(synth.array((2, FRAMES, p.hp.in_channels)))


def train(p, steps):
    from jisu import nn

    hp, tr = p.hp, p.train
    net = network(p)
    classifier = p.ecapa.Classifier(1, 0, hp.emb_size, hp.class_num)
    aam = p.util.AdditiveAngularMargin(0.2, 30)
    lr_list = [
        tr.learning_rate_clr_triangle_function(hp.step_size, hp.max_lrate, hp.base_lrate, i)
        for i in range(steps * hp.num_epochs)
    ]
    loss = nn.loss.SoftmaxCrossEntropyWithLogits(sparse=False, reduction="mean")
    scale = nn.FixedLossScaleUpdateCell(loss_scale_value=2**14)
    built = tr.BuildTrainNetwork(net, classifier, aam, loss, hp.minibatch_size, hp.class_num)
    opt = nn.Adam(built.trainable_params(), learning_rate=lr_list, weight_decay=hp.weight_decay)
    step = p.loss_scale.TrainOneStepWithLossScaleCellv2(built, opt, scale_sense=scale)
    data = synth.tensors(
        synth.array((2, FRAMES, hp.in_channels)), synth.array((2,), "int32", high=hp.class_num)
    )
    losses = []
    for _ in range(steps):
        step.set_train()
        batch_loss, overflow, _, output = step(*data)
        if bool(overflow):
            raise FloatingPointError("overflow at loss scale 2**14")
        if not synth.finite(output):
            raise FloatingPointError("non-finite logits")
        losses.append(synth.scalar(batch_loss))
    p.trained = net
    return losses
