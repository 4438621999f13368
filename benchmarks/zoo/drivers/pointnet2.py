"""official/cv/PointNet2: PointNet2 SSG classifier (farthest point sampling in a Python loop,
ball query, grouped Conv2d MLPs, group-all, BatchNorm1d + Dropout head, LogSoftmax) on 2
clouds of 512 points (its first set abstraction samples 512 centroids), the project's one-hot
NLLLoss, train.py's MultiStepLR per-step rates in AdamWeightDecay and Model(net, loss, opt)
with LossMonitor; 10 ModelNet classes."""

import synth

PROJECT = "official/cv/PointNet2"
ARGV = ["--batch_size=2", "--num_category=10", "--num_point=512"]
EXPORT = True
POINTS = 512


def imports(p):
    import train  # the project's train.py (its arguments)
    from src import lr_scheduler, pointnet2

    p.args, p.pointnet2, p.lr = train.parse_args(), pointnet2, lr_scheduler


def network(p):
    import numpy as np

    net = p.pointnet2.PointNet2(p.args.num_category, p.args.use_normals)
    # farthest point sampling starts at np.random.randint inside a @constexpr: MindSpore's
    # GRAPH mode (the project's) draws it once, at compile time; PyNative (and jisu) at every
    # call. The same start at every call keeps train and eval deterministic, as compiled.
    net.register_forward_pre_hook(lambda *_: np.random.seed(0))
    return net


def inputs(p):
    import numpy as np

    return synth.tensors(np.tanh(synth.array((2, POINTS, 3))))


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn

    args = p.args
    net = network(p)
    lr = p.lr.MultiStepLR(args.learning_rate, list(range(20, 201, 20)), 0.7, steps, args.epoch)
    opt = nn.AdamWeightDecay(
        net.trainable_params(),
        learning_rate=ms.Tensor(lr.get_lr()),
        beta1=0.9,
        beta2=0.999,
        eps=1e-08,
        weight_decay=args.decay_rate,
    )
    model = ms.Model(net, p.pointnet2.NLLLoss(), opt)
    data = synth.dataset(
        {
            "data": np.tanh(synth.array((2, POINTS, 3))),
            "label": synth.array((2,), "int32", high=args.num_category),
        },
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(1),))
