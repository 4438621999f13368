"""research/nlp/hypertext (iflytek settings): train.py's build_train wiring rebuilt (train.py
reads its data set at import time) with 100 words, 200 n-gram buckets, 16 tokens, 5 classes,
batch 2: HModelWithLoss (HModel in the Poincare ball: Mobius linear layers, its math_utils,
to_float(float16)), the project's RiemannianAdam (a custom Optimizer: opt_init_args_register,
parameters.clone, get_lr, Assign, a step Parameter), HModelTrainOneStepCell in
Model(net_with_grads), LossMonitor/TimeMonitor and its EvalCallBack (an eval pass and
save_checkpoint every 3 steps)."""

import synth

PROJECT = "research/nlp/hypertext"
EXPORT = True
SEQ, VOCAB, BUCKET, CLASSES = 16, 100, 200, 5


def imports(p):
    from src import config, hypertext, hypertext_train, radam_optimizer

    cfg = config.Config("", str(p.workdir), "CPU")
    cfg.useIflyek()
    cfg.n_vocab, cfg.bucket, cfg.max_length, cfg.embed = VOCAB, BUCKET, SEQ, 16
    cfg.num_classes, cfg.batch_size, cfg.eval_step = CLASSES, 2, 3
    cfg.learning_rate = 0.05
    p.cfg, p.ht, p.train_mod, p.radam = cfg, hypertext, hypertext_train, radam_optimizer


def network(p):
    import jisu as ms

    return p.ht.HModel(p.cfg).to_float(ms.float16)  # as HModelWithLoss builds it


def _columns():
    return {
        "ids": synth.array((2, SEQ), "int32", high=VOCAB),
        "ngrad_ids": synth.array((2, SEQ), "int32", high=BUCKET, seed=1),
        "label": synth.array((2, 1), "int32", high=CLASSES, seed=2),
    }


def inputs(p):
    c = _columns()
    return synth.tensors(c["ids"], c["ngrad_ids"])


def train(p, steps):
    import jisu as ms
    from jisu.train.callback import LossMonitor, TimeMonitor

    net_with_loss = p.train_mod.HModelWithLoss(p.cfg)
    net_with_loss.init_parameters_data()
    optimizer = p.radam.RiemannianAdam(
        learning_rate=p.cfg.learning_rate,
        params=filter(lambda x: x.requires_grad, net_with_loss.get_parameters()),
    )
    net_with_grads = p.train_mod.HModelTrainOneStepCell(net_with_loss, optimizer=optimizer)
    net_with_grads.set_train()
    model = ms.Model(net_with_grads)
    eval_cb = p.train_mod.EvalCallBack(
        net_with_loss.hmodel,
        synth.dataset(_columns(), 1),
        p.cfg.eval_step,
        str(p.workdir / "hypertext_iflytek.ckpt"),
    )
    callbacks = (LossMonitor(1), eval_cb, TimeMonitor(50))
    losses = synth.model_train(model, synth.dataset(_columns(), steps), callbacks)
    p.trained, p.model = net_with_loss.hmodel, model
    return losses
