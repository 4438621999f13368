"""official/audio/Tacotron2: Tacotron2 (3-conv + bi-LSTM encoder at the hard-coded 512
features, location-sensitive attention, LSTMCell decoder unrolled over 4 steps of 3 frames,
postnet) with a shrunk decoder (hparams set before the network is built), Tacotron2Loss in
NetWithLossClass (hparams.fp16_flag off: float32 on CPU, so train.py's to_float(float16) is
skipped), train.py's warm-up get_lr, Adam and TrainStepWrap (NPU float-status overflow check,
DynamicLossScaleUpdateCell) in Model(train_net) with LossCallBack, on a fixed batch of 2
texts x 10 symbols and 12 mel frames; the LSTM weights live in ParameterTuples."""

import synth

PROJECT = "official/audio/Tacotron2"
ARGV = ["--config_path=ljspeech_config.yaml", "--device_target=CPU", "--run_distribute=False"]
TRAIN_PY = False  # imported in imports(): its pipeline reads these hparams
STUBS = ["h5py"]  # the HDF5 data set (text cleaning needs: pip install inflect unidecode)
TEXT, FRAMES = 10, 12
SMALL = {
    "batch_size": 2,
    "test_batch_size": 2,
    "max_text_len": TEXT,
    "decoder_rnn_dim": 64,
    "attention_rnn_dim": 64,
    "prenet_dim": 32,
    "attention_dim": 32,
    "attention_location_n_filters": 8,
    "postnet_embedding_dim": 32,
    "postnet_n_convolutions": 3,
    "max_decoder_steps": FRAMES // 3,
    "fp16_flag": False,  # float32 on CPU (train.py then leaves the loss network uncast)
}


def imports(p):
    from src.hparams import hparams

    for name, value in SMALL.items():  # before the network modules read them
        setattr(hparams, name, value)
    import train  # the project's train.py
    from src import callback, tacotron2

    p.hps, p.train, p.taco, p.callback = hparams, train, tacotron2, callback


def network(p):
    import jisu as ms

    net = p.taco.Tacotron2()
    # with hparams.fp16_flag its LSTM states are float16: it runs as train.py casts it
    return net.to_float(ms.float16) if p.hps.fp16_flag else net


def _train_network(p):
    return p.taco.Tacotron2()


def _batch(p):
    import numpy as np

    hps = p.hps
    text = synth.array((2, TEXT), "int32", high=hps.n_symbols)
    lengths = np.array([TEXT, TEXT - 3], np.int32)
    # small targets: a float16 loss of ~1000 (targets at +-4) times the 2**12 loss scale
    # overflows, and the first 6 steps would all be skipped while the scale falls
    mel = np.tanh(synth.array((2, hps.num_mels, FRAMES), seed=1)) * 0.3
    gate = np.zeros((2, FRAMES), np.float32)
    gate[:, -1] = 1
    text_mask = np.arange(TEXT)[None, :] < lengths[:, None]
    mel_mask = np.ones((2, hps.num_mels, FRAMES), bool)
    rnn_mask = np.repeat(text_mask[:, :, None], 512, axis=2)
    return text, lengths, mel.astype(np.float32), gate, text_mask, mel_mask, rnn_mask


def inputs(p):
    text, lengths, mel, _, text_mask, mel_mask, rnn_mask = _batch(p)
    return synth.tensors(text, lengths, mel, text_mask, mel_mask, rnn_mask)


def train(p, steps):
    import jisu as ms
    from jisu.nn.wrap.loss_scale import DynamicLossScaleUpdateCell

    hps, taco = p.hps, p.taco
    lr = ms.Tensor(p.callback.get_lr(hps.lr, 2, steps, steps))
    scale_update_cell = DynamicLossScaleUpdateCell(
        loss_scale_value=2**12, scale_factor=2, scale_window=1000
    )
    net = _train_network(p)
    loss_net = taco.NetWithLossClass(net, taco.Tacotron2Loss())
    optimizer = ms.nn.optim.Adam(params=net.trainable_params(), learning_rate=lr)
    if hps.fp16_flag:
        loss_net.to_float(ms.float16)
    train_net = taco.TrainStepWrap(loss_net, optimizer, scale_update_cell)
    train_net.set_train()
    model = ms.Model(train_net)
    names = ["text", "length", "mel", "gate", "text_mask", "mel_mask", "rnn_mask"]
    data = synth.dataset(dict(zip(names, _batch(p))), steps)
    p.trained, p.model = net, model

    class SameDropout(ms.train.callback.Callback):
        """The same dropout masks every step (its prenet drops half always): on one fixed
        batch the losses then show the optimisation, not the masks' noise."""

        def step_begin(self, run_context):
            ms.set_seed(0)

    return synth.model_train(model, data, (SameDropout(), p.callback.LossCallBack(steps)))
