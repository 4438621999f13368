"""research/nlp/fasttext (ag_config.yaml): train.py's own _build_training_pipeline runs
unchanged with a 200-word vocabulary: FastTextNetWithLoss (Embedding with padding_idx, an fp16
Dense), Adam over a polynomial-decay lr tensor, FastTextTrainOneStepCell (GradOperation with
sens, HyperMap of a MultitypeFuncGraph clipping each gradient with nn.ClipByNorm) in
Model(net_with_grads), LossCallBack/TimeMonitor/ModelCheckpoint; its Model records the losses."""

import numpy as np
import synth

PROJECT = "research/nlp/fasttext"
ARGV = ["--config_path=ag_config.yaml", "--device_target=CPU"]
EXPORT = True
SEQ, VOCAB = 12, 200


def imports(p):
    import train
    from src import fasttext_model

    train.config.vocab_size = VOCAB
    train.config.batch_size = 2
    train.config.epoch = 1
    train.config.warmup_steps = 2
    train.config.lr = 2.0  # base lr = lr / 10 on one device
    train.config.save_ckpt_dir = str(p.workdir)
    train.config.rank_id = 0  # run_train sets it from RANK_ID
    p.train, p.fm = train, fasttext_model


def network(p):
    c = p.train.config
    return p.fm.FastText(c.vocab_size, c.embedding_dims, c.num_class)


def _columns():
    tokens = synth.array((2, SEQ), "int32", high=VOCAB)
    tokens[:, -3:] = 0  # padding
    lengths = np.full((2, 1), SEQ - 3, "float32")
    return tokens, lengths


def inputs(p):
    return synth.tensors(*_columns())


def train(p, steps):
    import jisu as ms

    tokens, lengths = _columns()
    data = synth.dataset(
        {
            "src_token_text": tokens,
            "src_tokens_text_length": lengths,
            "label_idx_tag": synth.array((2, 1), "int32", high=4),
        },
        steps,
    )
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train._build_training_pipeline(data)
    p.trained = recorder.model.network.network.fasttext
    p.model = recorder.model
    return recorder.losses
