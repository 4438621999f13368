"""official/recommend/DeepFM: ModelBuilder.get_train_eval_net (DeepFMModel, NetWithLossClass,
the project's TrainStepWrap with its own loss scale) in Model(train_net, eval_network=...,
metrics={"auc": AUCMetric()}) as train.py; 39 fields, a 1000-id vocabulary; then Model.eval."""

import synth

PROJECT = "official/recommend/DeepFM"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
FIELDS, VOCAB = 39, 1000


def imports(p):
    from src import deepfm
    from src.callback import LossCallBack
    from src.model_utils.config import config

    config.data_vocab_size = VOCAB
    config.batch_size = 2
    config.convert_dtype = False  # train.py: config.device_target != "CPU"
    p.config, p.deepfm, p.LossCallBack = config, deepfm, LossCallBack


def network(p):
    return p.deepfm.DeepFMModel(p.config)


def inputs(p):
    return synth.tensors(
        synth.array((2, FIELDS), "int32", high=VOCAB), synth.array((2, FIELDS), seed=2)
    )


def train(p, steps):
    import jisu as ms

    builder = p.deepfm.ModelBuilder(p.config, p.config)
    train_net, eval_net = builder.get_train_eval_net()
    auc = p.deepfm.AUCMetric()
    model = ms.Model(train_net, eval_network=eval_net, metrics={"auc": auc})
    label = synth.array((2, 1), "float32", high=2)
    data = synth.dataset(
        {
            "feat_ids": synth.array((2, FIELDS), "int32", high=VOCAB),
            "feat_vals": synth.array((2, FIELDS), seed=2),
            "label": label,
        },
        steps,
    )
    cb = p.LossCallBack(loss_file_path=str(p.workdir / "loss.log"))
    losses = synth.model_train(model, data, (cb,))
    label[0, 0], label[1, 0] = 0, 1  # AUC needs both classes
    result = model.eval(
        synth.dataset(
            {
                "feat_ids": synth.array((2, FIELDS), "int32", high=VOCAB),
                "feat_vals": synth.array((2, FIELDS), seed=2),
                "label": label,
            },
            1,
        )
    )
    if "auc" not in result:
        raise AssertionError(f"Model.eval gave {result}")
    p.trained, p.model = train_net.network.network, model
    return losses
