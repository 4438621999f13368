"""research/cv/simclr: SimCLR (ResNet-50, CIFAR stem, 32x32) pre-training wired as train.py's
__main__ block does: XavierUniform / TruncatedNormal re-initialisation, get_optimizer (Adam
over 'beta'/'gamma'/'bias' weight-decay groups with order_params and a linear per-step rate
list), the NT_Xent contrastive loss in its NetWithLossCell (auto_prefix=False) on two views,
nn.TrainOneStepCell in Model(train_net), TimeMonitor + ModelCheckpoint + LossMonitor."""

import synth

PROJECT = "research/cv/simclr"
ARGV = [
    "--device_target=GPU",  # train.py refuses CPU at import: set_context gets CPU (below)
    "--run_distribute=False",
    "--run_cloudbrain=False",
    "--batch_size=2",
    "--epoch_size=1",
    "--warmup_epochs=0",
    "--projection_dimension=16",
]
EXPORT = True
TRAIN_PY = False


def imports(p):
    import jisu

    original = jisu.context.set_context

    def on_cpu(*args, **kwargs):  # train.py's module-level set_context(device_target="GPU")
        kwargs["device_target"] = "CPU"
        return original(*args, **kwargs)

    jisu.context.set_context = on_cpu
    try:
        import train
    finally:
        jisu.context.set_context = original
    from src import nt_xent, optimizer, resnet, simclr_model

    train.args.train_output_path = str(p.workdir / "outputs")
    p.train, p.args, p.nt_xent, p.optimizer = train, train.args, nt_xent, optimizer
    p.resnet, p.simclr = resnet, simclr_model


def network(p):
    a = p.args
    base = p.resnet.resnet50(1, a.width_multiplier, cifar_stem=a.dataset_name == "cifar10")
    return p.simclr.SimCLR(base, a.projection_dimension, base.end_point.in_channels)


def inputs(p):
    x = synth.array((2, 3, 32, 32))
    return synth.tensors(x, x + 0.1 * synth.array((2, 3, 32, 32), seed=1))


def train(p, steps):
    import os

    import jisu as ms
    import jisu.common.initializer as weight_init
    from jisu import nn
    from jisu.train.callback import CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor

    a = p.args
    net = network(p)
    for _, cell in net.cells_and_names():
        w = getattr(cell, "weight", None)
        if isinstance(cell, nn.Conv2d):
            w.set_data(weight_init.initializer(weight_init.XavierUniform(), w.shape, w.dtype))
        if isinstance(cell, nn.Dense):
            w.set_data(weight_init.initializer(weight_init.TruncatedNormal(), w.shape, w.dtype))
    optimizer = p.optimizer.get_train_optimizer(net, steps, a)
    loss = p.nt_xent.NT_Xent_Loss(a.batch_size, a.temperature)
    net_loss = p.train.NetWithLossCell(net, loss)
    train_net = nn.TrainOneStepCell(net_loss, optimizer)
    model = ms.Model(train_net)
    x, y = inputs(p)
    data = synth.dataset(
        {
            "data_x": x.numpy(),
            "data_y": y.numpy(),
            "label": synth.array((2,), "int32", high=10),
        },
        steps,
    )
    ckpt = ModelCheckpoint(
        prefix="checkpoint_simclr",
        directory=os.path.join(a.train_output_path, "checkpoint"),
        config=CheckpointConfig(save_checkpoint_steps=a.save_checkpoint_epochs),
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (TimeMonitor(data_size=steps), ckpt, LossMonitor()))
