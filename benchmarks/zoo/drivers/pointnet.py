"""official/cv/PointNet: PointNetDenseCls (STN3d input transform with batched matmul, shared
Conv1d MLPs with BatchNorm2d over expanded dims, per-point LogSoftmax) for part segmentation
of 2 x 64 points into 4 classes, PointnetLoss (one-hot NLL, 1-based labels), train.py's
piecewise_constant_lr Adam with loss_scale 1024 and nn.WithLossCell in
nn.TrainOneStepCell(sens=1024), as train_model calls it."""

import synth

PROJECT = "official/cv/PointNet"
ARGV = ["--device_target=CPU", "--batchSize=2", "--learning_rate=0.001"]
EXPORT = True
STUBS = ["plyfile"]  # the ShapeNet reader
POINTS, CLASSES = 64, 4


def imports(p):
    import train  # the project's train.py (its args)
    from src import loss, network

    p.args, p.network, p.loss = train.args, network, loss


def network(p):
    return p.network.PointNetDenseCls(k=CLASSES, feature_transform=p.args.feature_transform)


def inputs(p):
    return synth.tensors(synth.array((2, 3, POINTS)))


def train(p, steps):
    from jisu import nn

    args = p.args
    classifier = network(p)
    classifier.set_train(True)
    milestone = list(range(80, 20000, 80))
    lr_rate = [args.learning_rate * 0.5**x for x in range(249)]
    learning_rates = nn.piecewise_constant_lr(milestone, lr_rate)
    optim = nn.Adam(
        params=classifier.trainable_params(),
        learning_rate=learning_rates,
        beta1=0.9,
        beta2=0.999,
        loss_scale=1024,
    )
    net_loss = p.loss.PointnetLoss(num_class=CLASSES, feature_transform=args.feature_transform)
    net_train = nn.TrainOneStepCell(nn.WithLossCell(classifier, net_loss), optim, sens=1024)
    data = synth.tensors(
        synth.array((2, 3, POINTS)), synth.array((2, POINTS), "int32", high=CLASSES) + 1
    )
    losses = []
    for _ in range(steps):
        losses.append(synth.scalar(net_train(*data)))
    p.trained = classifier
    return losses
