"""Exact resume: a run stopped after a checkpoint and resumed in a fresh Model gives the
uninterrupted run's losses bit for bit, also when the network draws random numbers."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import jisu
from jisu.dataset.record.validate import MalformedFileError
from jisu.train import CheckpointConfig, LambdaCallback, ModelCheckpoint
from jisu.train.checkpoint import capture_rng_state, restore_rng_state
from jisu.train.ckpt_state import model_entries
from jisu.train.serialization import write_checkpoint
from tests.train.test_model import data


class NoisyMLP(nn.Module):
    """An MLP whose hidden layer is perturbed by draws from one global generator: torch's
    (dropout), NumPy's or Python's (user code in a forward)."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source
        self.hidden = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.dropout = nn.Dropout(0.5)
        self.out = nn.Linear(16, 3)

    def forward(self, x):
        h = self.hidden(x)
        if self.source == "torch":
            h = self.dropout(h)
        elif self.source == "numpy":
            h = h * torch.from_numpy(np.random.random(tuple(h.shape)).astype(np.float32))
        else:
            h = h * random.random()
        return self.out(h)


def noisy_model(source):
    torch.manual_seed(0)
    net = NoisyMLP(source)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    return jisu.Model(net, nn.CrossEntropyLoss(), opt)


def seed_all(seed):
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def train(m, epochs, sink, sink_size, callbacks=(), initial_epoch=None):
    """The losses of ``m.train``, one per step, as Python floats."""
    losses = []
    record = LambdaCallback(
        on_train_step_end=lambda rc: losses.append(float(rc.original_args().net_outputs))
    )
    m.train(
        epochs, data()[0], callbacks=[*callbacks, record], dataset_sink_mode=sink,
        sink_size=sink_size, initial_epoch=initial_epoch,
    )  # fmt: skip
    return losses


# eager: 5 steps an epoch, saved after step 4 (mid-epoch);
# sink: 3-step sinks over 5-batch data, saved at the end of sink 2 (step 6, mid data epoch)
CASES = {False: (3, -1, "run-1_4.ckpt", 4), True: (4, 3, "run-2_3.ckpt", 6)}


@pytest.mark.parametrize("source", ["torch", "numpy", "python"])
@pytest.mark.parametrize("sink", [False, True], ids=["eager", "sink"])
def test_a_stopped_run_resumes_with_the_uninterrupted_losses(tmp_path, sink, source):
    epochs, sink_size, name, done = CASES[sink]
    seed_all(1)
    reference = train(noisy_model(source), epochs, sink, sink_size)

    seed_all(1)
    saver = ModelCheckpoint("run", str(tmp_path), CheckpointConfig(save_checkpoint_steps=4))
    stop = LambdaCallback(
        on_train_step_end=lambda rc: rc.original_args().cur_step_num == 7 and rc.request_stop()
    )
    train(noisy_model(source), epochs, sink, sink_size, callbacks=[saver, stop])

    resumed = noisy_model(source)
    seed_all(999)  # the generators now differ: only the checkpoint can bring them back
    params = jisu.load_checkpoint(str(tmp_path / name), model=resumed)
    assert resumed.state_dict()["cur_step_num"] == done  # the loaded position
    assert "hidden.0.weight" in params  # MindSpore's flat dict
    losses = train(resumed, epochs, sink, sink_size)  # initial_epoch None: the position
    assert losses == reference[done:]  # bit for bit
    assert len(set(reference)) == len(reference)  # the noise is real: no two steps alike


def test_restored_states_give_the_same_draws_from_every_generator():
    seed_all(3)
    state = capture_rng_state()
    expected = (torch.rand(4).tolist(), np.random.random(4).tolist(), random.random())
    seed_all(4)
    restore_rng_state(state)
    assert (torch.rand(4).tolist(), np.random.random(4).tolist(), random.random()) == expected


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only machine's path")
def test_cuda_states_without_cuda_are_skipped_with_a_warning():
    state = dict(capture_rng_state(), cuda=[torch.zeros(16, dtype=torch.uint8)])
    expected = torch.get_rng_state()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        restore_rng_state(state)
    assert any("1 CUDA devices; 0 available" in str(w.message) for w in caught)
    assert torch.equal(torch.get_rng_state(), expected)  # the CPU state is still restored


def test_a_bad_rng_state_is_refused_at_load_naming_the_file(tmp_path):
    path = tmp_path / "a.ckpt"
    rng = dict(capture_rng_state(), python=(3, (1, 2, 3), None))
    m = noisy_model("torch")
    items, _ = model_entries(m)
    write_checkpoint(str(path), items, {"epoch": 0, "rng_state": rng})
    before = torch.get_rng_state()
    with pytest.raises(MalformedFileError, match="bad 'rng_state'") as caught:
        jisu.load_checkpoint(str(path), model=m)
    assert str(path) in str(caught.value)
    assert torch.equal(torch.get_rng_state(), before)  # checked on fresh generators
