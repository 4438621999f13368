"""official/nlp/Bert (run_classifier.py, task_classifier_cpu_config.yaml): a tiny BERT
(2 layers, hidden 32, 16 tokens, vocabulary 100) as BertCLS; the project's own do_train runs
unchanged (AdamWeightDecay over decay/no-decay groups with BertLearningRate, the "pretrained"
checkpoint loaded with load_checkpoint + load_param_into_net, BertFinetuneCellCPU in
Model(netwithgrads), LossCallBack + ModelCheckpoint, sink mode), its Model recording losses."""

import numpy as np
import synth

PROJECT = "official/nlp/Bert"
ARGV = ["--config_path=../../task_classifier_cpu_config.yaml", "--device_target=CPU"]
EXPORT = True
TRAIN_MODULE = "run_classifier"
SEQ, VOCAB = 16, 100
TINY = {
    "seq_length": SEQ,
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 32,
}


def imports(p):
    import run_classifier
    from src import bert_for_finetune

    for key, value in TINY.items():
        setattr(run_classifier.bert_net_cfg, key, value)
    run_classifier.optimizer_cfg.AdamWeightDecay.learning_rate = 1e-3
    p.rc, p.ft = run_classifier, bert_for_finetune


def _cls(p, training):
    return p.ft.BertCLS(
        p.rc.bert_net_cfg, training, num_labels=2, dropout_prob=0.1, assessment_method="accuracy"
    )


def network(p):
    return _cls(p, False).bert


def _columns():
    ids = synth.array((2, SEQ), "int32", high=VOCAB)
    mask = np.ones((2, SEQ), "int32")
    segments = np.zeros((2, SEQ), "int32")
    return ids, mask, segments


def inputs(p):
    return synth.tensors(*_columns())


def train(p, steps):
    import jisu as ms

    net = _cls(p, True)
    pretrained = str(p.workdir / "pretrained.ckpt")
    ms.save_checkpoint(net, pretrained)
    ids, mask, segments = _columns()
    data = synth.dataset(
        {
            "input_ids": ids,
            "input_mask": mask,
            "segment_ids": segments,
            "label_ids": synth.array((2,), "int32", high=2),
        },
        steps,
    )
    p.rc.Model, recorder = synth.recording_model(ms.Model)
    p.rc.do_train(data, net, pretrained, str(p.workdir / "finetune"), 1)
    p.trained = net.bert
    p.model = getattr(recorder, "model", None)
    return recorder.losses
