"""official/cv/VIT: train.py's own train_net runs unchanged (a tiny ViT built from the project's
VitConfig / ViT classes: 2 layers, d_model 32, 8x8 patches of 32x32 images; comm_fusion set on
each parameter, CrossEntropySmoothMixup on mixup-style soft labels, the per-step cosine lr list,
its own AdamW Optimizer subclass (@jit construct, parameters.clone moments, Parameter
attribute updates, decay_flags over weight-decay groups with grad_centralization and
order_params, loss_scale), FixedLossScaleManager, Model amp_level O3 with the eval engine's
metrics / eval_network, StateMonitor + ModelCheckpoint(async_save), sink_size); only its
get_network (the sizes), get_dataset and Model (recording the losses) are swapped."""

import numpy as np
import synth

PROJECT = "official/cv/VIT"
ARGV = ["--config_path=config/vit_patch32_imagenet2012_config_standalone.yml"]
EXPORT = True
TRAIN_PY = False
SIZE, CLASSES = 32, 10


def imports(p):
    import train
    from src import vit

    cfg = train.config
    cfg.max_epoch, cfg.warmup_epochs, cfg.class_num = 1, 0, CLASSES
    cfg.train_image_size = cfg.eval_image_size = SIZE
    cfg.save_checkpoint_path = str(p.workdir / "outputs")
    p.train, p.vit = train, vit


def network(p):
    c = p.vit.vit_cfg
    c.d_model, c.depth, c.heads, c.mlp_dim, c.patch_size = 32, 2, 2, 64, 8
    c.dim_head, c.normalized_shape = c.d_model // c.heads, c.d_model
    c.image_size, c.num_classes = SIZE, CLASSES
    config = p.vit.VitConfig(c)
    return config.network(config)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms

    labels = synth.array((2,), "int32", high=CLASSES)
    soft = np.zeros((2, CLASSES), np.float32)  # the dataset's mixup output (one-hot mixed)
    soft[np.arange(2), labels] = 0.8
    soft[np.arange(2), (labels + 1) % CLASSES] = 0.2
    data = synth.dataset({"image": synth.array((2, 3, SIZE, SIZE)), "label": soft}, steps)
    p.train.get_network = lambda backbone_name, args: network(p)
    p.train.get_dataset = lambda dataset_name, do_train, **k: data if do_train else None
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.train_net()
    p.trained = recorder.model.network
    p.model = recorder.model
    return recorder.losses
