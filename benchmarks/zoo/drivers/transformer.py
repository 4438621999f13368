"""official/nlp/Transformer: train.py's own run_transformer_train runs unchanged with a tiny
config (2 layers, hidden 32, 16 tokens, vocabulary 100, batch 2): TransformerNetworkWithLoss,
Adam over create_dynamic_lr, DynamicLossScaleManager.get_update_cell and
TransformerTrainOneStepWithLossScaleCell in Model(netwithgrads), the project's LossCallBack and
ModelCheckpoint; only its dataset function and Model are swapped (synthetic batches, a Model
that records the losses)."""

import numpy as np
import synth

PROJECT = "official/nlp/Transformer"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
TRAIN_PY = False
SEQ, VOCAB = 16, 100
TINY = {
    "batch_size": 2,
    "seq_length": SEQ,
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 32,
    "epoch_size": 1,
}


def imports(p):
    import train
    from src import transformer_model

    for key, value in TINY.items():
        setattr(train.config, key, value)
    train.config.lr_schedule.warmup_steps = 2
    train.config.save_checkpoint_path = str(p.workdir)
    p.train, p.tm = train, transformer_model


def network(p):
    # teacher-forced (is_training=True: the train graph, no beam search), run in eval mode
    return p.tm.TransformerModel(p.train.config, True)


def _columns():
    ids = synth.array((2, SEQ), "int32", high=VOCAB)
    mask = np.ones((2, SEQ), "int32")
    return ids, mask


def inputs(p):
    ids, mask = _columns()
    return synth.tensors(ids, mask, ids, mask)


def train(p, steps):
    import jisu as ms

    ids, mask = _columns()
    columns = {
        "source_eos_ids": ids,
        "source_eos_mask": mask,
        "target_sos_ids": ids,
        "target_sos_mask": mask,
        "target_eos_ids": np.roll(ids, -1, axis=1),
        "target_eos_mask": mask,
    }
    p.train.create_transformer_dataset = lambda **kw: synth.dataset(columns, steps)
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.run_transformer_train()
    p.trained = recorder.model.network.network.transformer  # netwithgrads -> netwithloss
    p.model = getattr(recorder, "model", None)
    return recorder.losses
