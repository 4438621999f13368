"""research/recommend/ncf (default_config.yaml): train.py's own run_train runs unchanged with 30
users, 40 items (the configured layers): NCFModel (GMF + MLP over shared embeddings),
NetWithLossClass (per-sample SoftmaxCrossEntropyWithLogits masked by valid_pt_mask), the
project's TrainStepWrap (Adam over a dynamic lr list with loss_scale, GradOperation with a
Fill'd sens) in Model(train_net), LossMonitor/TimeMonitor/ModelCheckpoint, sink mode; only
create_dataset is synthetic (pandas, for MovieLens, is stubbed)."""

import numpy as np
import synth

PROJECT = "research/recommend/ncf"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
STUBS = ["pandas"]  # reads MovieLens only
USERS, ITEMS, BATCH = 30, 40, 4


def imports(p):
    import train
    from src import ncf

    c = train.config
    c.train_epochs = 1  # layers [64, 32, 16] and 16 factors: run_train fixes mf_dim=16
    c.checkpoint_path = str(p.workdir / "ckpt")
    p.train, p.ncf = train, ncf


def network(p):
    c = p.train.config
    return p.ncf.NCFModel(
        num_users=USERS,
        num_items=ITEMS,
        num_factors=c.num_factors,
        model_layers=c.layers,
        mf_regularization=0,
        mlp_reg_layers=[0.0, 0.0, 0.0, 0.0],
        mf_dim=16,
    )


def _columns():
    users = synth.array((BATCH, 1), "int32", high=USERS)
    items = synth.array((BATCH, 1), "int32", high=ITEMS, seed=1)
    return users, items


def inputs(p):
    return synth.tensors(*_columns())


def train(p, steps):
    import jisu as ms

    users, items = _columns()
    data = synth.dataset(
        {
            "user_id": users,
            "item_id": items,
            "labels": synth.array((BATCH, 1), "int32", high=2, seed=2),
            "valid_pt_mask": np.ones((BATCH, 1), "float32"),
        },
        steps,
    )
    made = []
    p.train.create_dataset = lambda **kw: (data, USERS, ITEMS)
    p.train.NCFModel = lambda **kw: made.append(p.ncf.NCFModel(**kw)) or made[-1]
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.run_train()
    p.trained, p.model = made[0], recorder.model
    return recorder.losses
