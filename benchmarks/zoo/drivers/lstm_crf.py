"""research/nlp/lstm_crf (default_config.yaml, CPU): train.py's own train_lstm_crf runs unchanged
with a 50-word vocabulary, 10-token sentences, a 2-layer bidirectional nn.LSTM of hidden 16:
Lstm_CRF (frozen pretrained Embedding, CRF forward algorithm and gold path score), AdamWeightDecay
over decay/no-decay groups with the project's LearningRateSchedule, Lstm_CRF_Cell_CPU
(GradOperation with a loss-scale sens, HyperMap grad_scale and clip_grad) in Model(netwithgrads),
its LossCallBack, TimeMonitor, ModelCheckpoint, and EvalCabllBack's Viterbi decoding through
Model.predict_network at each epoch's end; only ImdbParser and get_data_set are synthetic."""

import synth

PROJECT = "research/nlp/lstm_crf"
ARGV = ["--config_path=default_config.yaml"]
EXPORT = True
SEQ, VOCAB, EMBED = 10, 50, 300
TAGS = {"O": 0, "B-PER": 1, "I-PER": 2, "B-LOC": 3, "I-LOC": 4}


def _rows():
    words = synth.array((2, SEQ), "int32", high=VOCAB)
    tags = synth.array((2, SEQ), "int32", high=len(TAGS), seed=4)
    return words, tags


class _Parser:
    """ImdbParser's get_datas_embeddings on synthetic sentences (GloVe and CoNLL files)."""

    def __init__(self, *args, **kwargs):
        pass

    def get_datas_embeddings(self, seg, build_data):
        words, tags = _rows()
        table = synth.array((VOCAB, EMBED), seed=3) * 0.1
        return table, SEQ, None, None, list(words), list(tags), dict(TAGS)


def imports(p):
    import train
    from src import LSTM_CRF

    c = train.config
    c.num_epochs, c.batch_size, c.num_hiddens = 1, 2, 16
    c.ckpt_save_path = str(p.workdir / "ckpt")
    c.AdamWeightDecay.learning_rate = 0.01
    p.train, p.crf = train, LSTM_CRF


def network(p):
    import jisu as ms

    c = p.train.config
    table = ms.Tensor(synth.array((VOCAB, EMBED), seed=3) * 0.1)
    return p.crf.Lstm_CRF(
        vocab_size=VOCAB,
        tag_to_index=dict(TAGS),
        embedding_size=EMBED,
        hidden_size=c.num_hiddens,
        num_layers=c.num_layers,
        weight=table,
        bidirectional=True,
        batch_size=2,
        seq_length=SEQ,
        dropout=0.0,
        is_training=True,
    )


def inputs(p):
    return synth.tensors(*_rows())


def train(p, steps):
    import jisu as ms

    words, tags = _rows()
    data = synth.dataset({"feature": words, "label": tags}, steps)
    p.train.ImdbParser = _Parser
    p.train.get_data_set = lambda *a, **k: data
    made = []
    base = p.crf.Lstm_CRF
    p.train.Lstm_CRF = lambda **kw: made.append(base(**kw)) or made[-1]
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.train_lstm_crf()
    made[0].is_training = True
    p.trained, p.model = made[0], recorder.model
    return recorder.losses
