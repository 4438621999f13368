"""research/cv/densenet: train.py's own train runs unchanged (DenseNet100 on CIFAR-10 shapes,
the label-smoothing CrossEntropy with add_flags_recursive(fp32=True), the MultiStepLR
scheduler's per-step list, Momentum over get_param_groups (no decay on BN/bias) with
loss_scale, BuildTrainNetwork in Model(train_net, optimizer=...) with a
DynamicLossScaleManager, ProgressMonitor + ModelCheckpoint, dataset_sink_mode=True); only its
dataset function and Model (recording the losses) are swapped."""

import synth

PROJECT = "research/cv/densenet"
ARGV = [
    "--config_path=densenet100_config.yaml",
    "--device_target=CPU",
    "--is_dynamic_loss_scale=1",
    "--max_epoch=1",
]
EXPORT = True
TRAIN_PY = False


def imports(p):
    import src.datasets
    import train
    from src.network import densenet

    train.config.save_ckpt_path = str(p.workdir / "ckpt")
    train.config.ckpt_interval = 6
    p.train, p.datasets, p.densenet = train, src.datasets, densenet


def network(p):
    return p.densenet.DenseNet100(p.train.config.num_classes)


def inputs(p):
    return synth.tensors(synth.array((2, 3, 32, 32)))


def train(p, steps):
    import jisu as ms

    data = synth.dataset(
        {"image": synth.array((2, 3, 32, 32)), "label": synth.array((2,), "int32", high=10)}, steps
    )
    p.datasets.classification_dataset_cifar10 = lambda *a, **k: data
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.train()
    p.trained = recorder.model.network.network  # Model's network is BuildTrainNetwork
    p.model = recorder.model
    return recorder.losses
