"""The numbers of a checkpoint (its resume state) agree with its name: ``state["epoch"]`` is
the whole epochs done (Keras' ``initial_epoch``), the name's epoch the 1-based epoch the step
belongs to, so a file written at the end of epoch N (``run-000N_000024.ckpt``) holds
``epoch == N`` and ``step_in_epoch == 0``; inside epoch N it holds ``N - 1`` and the steps
done. A resume from an epoch's end gives the uninterrupted run's losses (the data's position,
the learning-rate schedule's epoch step and the random states included), and so does an older
state that held the end of epoch N as ``epoch == N - 1`` with ``step_in_epoch`` a whole epoch."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch
from torch import nn

import jisu
from jisu.train import CheckpointConfig, LambdaCallback, ModelCheckpoint
from jisu.train.ckpt_state import MODEL_KEYS, RESUME_ENTRY, unpack_resume
from jisu.train.serialization import write_checkpoint
from tests.train.test_model import data

STEPS = 24  # batches of the data per pass: 96 rows in batches of 4


def batches():
    return data(n=96, batch=4)[0]


class Unsized:
    """The same batches through an iterable without ``len``: the loop learns an epoch's end
    only from the data."""

    def __iter__(self):
        iterator = batches().create_tuple_iterator(num_epochs=1)
        try:
            yield from iterator
        finally:
            iterator.close()


def scheduled_model():
    """Dropout (draws from torch's generator) and a learning rate halved every epoch."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    schedule = {"scheduler": sched, "interval": "epoch"}
    return jisu.Model(net, nn.CrossEntropyLoss(), opt, lr_scheduler=schedule)


def seed_all(seed):
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


# mode: (dataset factory, sink mode, sink_size, steps of an epoch)
MODES = {
    "eager": (batches, False, -1, STEPS),
    "eager-unsized": (Unsized, False, -1, STEPS),
    "sink": (batches, True, -1, STEPS),
    "sink-unsized": (Unsized, True, -1, STEPS),
    "sink_size-12": (batches, True, 12, 12),  # epoch 2 ends where the data's first pass does
    "sink_size-16": (batches, True, 16, 16),  # epochs across the data's passes
}


def train(m, mode, epochs, callbacks=(), initial_epoch=None):
    """The losses of ``m.train`` in ``mode``, one per step, as Python floats."""
    make, sink, sink_size, _ = MODES[mode]
    losses = []
    record = LambdaCallback(
        on_train_step_end=lambda rc: losses.append(float(rc.original_args().net_outputs))
    )
    m.train(
        epochs, make(), callbacks=[*callbacks, record], dataset_sink_mode=sink,
        sink_size=sink_size, initial_epoch=initial_epoch,
    )  # fmt: skip
    return losses


def saving_every_step(folder):
    config = CheckpointConfig(
        save_checkpoint_steps=1, keep_checkpoint_max=0, zero_pad=True, append_info=["epoch_num"]
    )
    return ModelCheckpoint("run", str(folder), config)


def resume_of(path):
    """The resume state a checkpoint file holds, and its MindSpore entries."""
    params = jisu.load_checkpoint(str(path))
    return unpack_resume(params.pop(RESUME_ENTRY), str(path)), params


def name(epoch, step):
    return f"run-{epoch:04d}_{step:06d}.ckpt"


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """``run(mode)``: a 3-epoch run that saved a checkpoint at every step it could (once per
    mode): its losses and folder."""
    runs = {}

    def run(mode):
        if mode not in runs:
            folder = tmp_path_factory.mktemp(mode)
            seed_all(1)
            losses = train(scheduled_model(), mode, 3, callbacks=[saving_every_step(folder)])
            runs[mode] = losses, folder
        return runs[mode]

    return run


SIZED = [mode for mode, (make, *_) in MODES.items() if make is batches]


@pytest.mark.parametrize("mode", list(MODES))
def test_every_file_holds_the_epochs_done_and_its_name_the_epoch_of_the_step(uninterrupted, mode):
    losses, folder = uninterrupted(mode)
    _, sink, _, steps = MODES[mode]
    assert len(losses) == 3 * steps
    # eager: a file per step; sink mode: per sink, and a sink is an epoch: at epoch ends only
    written = [(e, s) for e in (1, 2, 3) for s in range(1, steps + 1) if not sink or s == steps]
    assert sorted(os.listdir(folder)) == [name(*at) for at in written]
    for epoch, step in written:
        state, params = resume_of(folder / name(epoch, step))
        at_end = step == steps
        assert (state["epoch"], state["step_in_epoch"]) == (
            (epoch, 0) if at_end else (epoch - 1, step)
        ), name(epoch, step)
        assert params["epoch_num"].item() == epoch  # MindSpore's entry (append_info)
        assert state["cur_step_num"] == (epoch - 1) * steps + step


def test_the_files_the_issue_names_hold_these_numbers(uninterrupted):
    _, folder = uninterrupted("eager")
    end_of_second, params = resume_of(folder / "run-0002_000024.ckpt")
    assert (end_of_second["epoch"], end_of_second["step_in_epoch"]) == (2, 0)
    assert params["epoch_num"].item() == 2
    mid_third, params = resume_of(folder / "run-0003_000010.ckpt")
    assert (mid_third["epoch"], mid_third["step_in_epoch"]) == (2, 10)
    assert params["epoch_num"].item() == 3


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("epoch", [1, 2])
def test_a_resume_from_an_epochs_end_gives_the_uninterrupted_losses(uninterrupted, mode, epoch):
    reference, folder = uninterrupted(mode)
    steps = MODES[mode][3]
    resumed = scheduled_model()
    seed_all(999)  # the generators now differ: only the checkpoint can bring them back
    jisu.load_checkpoint(str(folder / name(epoch, steps)), model=resumed)
    assert resumed.state_dict()["epoch"] == epoch
    losses = train(resumed, mode, 3)  # initial_epoch None: the loaded position
    assert losses == reference[epoch * steps :]  # bit for bit
    # the schedule's epoch steps were in the file: the rate is the uninterrupted run's
    assert resumed.optimizer.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5**3)


def test_a_resume_from_inside_an_epoch_gives_the_uninterrupted_losses(uninterrupted):
    # eager: a sink is an epoch, and a plain iterable has no position inside one
    mode = "eager"
    reference, folder = uninterrupted(mode)
    resumed = scheduled_model()
    seed_all(999)
    jisu.load_checkpoint(str(folder / name(3, 10)), model=resumed)
    state = resumed.state_dict()
    assert (state["epoch"], state["step_in_epoch"]) == (2, 10)
    steps = MODES[mode][3]
    assert train(resumed, mode, 3, initial_epoch=2) == reference[2 * steps + 10 :]


def old_numbering(state, steps):
    """A state as earlier code could write an epoch's end: the epoch's last step, not done."""
    assert state["step_in_epoch"] == 0
    return dict(state, epoch=state["epoch"] - 1, step_in_epoch=steps)


@pytest.mark.parametrize("mode", SIZED)  # unsized data: an epoch's steps are never known
@pytest.mark.parametrize("passed", ["old", "new"])
def test_an_old_numbered_state_still_resumes_exactly(uninterrupted, tmp_path, mode, passed):
    reference, folder = uninterrupted(mode)
    steps = MODES[mode][3]
    state, params = resume_of(folder / name(2, steps))
    path = str(tmp_path / "old.ckpt")
    write_checkpoint(path, list(params.items()), old_numbering(state, steps))
    resumed = scheduled_model()
    seed_all(999)
    jisu.load_checkpoint(path, model=resumed)
    state = resumed.state_dict()
    assert (state["epoch"], state["step_in_epoch"]) == (1, steps)  # as written
    # the old files' resume (initial_epoch = their epoch) and the new numbers both work
    losses = train(resumed, mode, 3, initial_epoch=1 if passed == "old" else 2)
    assert losses == reference[2 * steps :]


def test_an_old_numbered_state_with_another_initial_epoch_is_refused(uninterrupted):
    _, folder = uninterrupted("eager")
    old = old_numbering(resume_of(folder / name(1, STEPS))[0], STEPS)
    resumed = scheduled_model()
    resumed.load_state_dict({key: old[key] for key in MODEL_KEYS if key in old})
    with pytest.raises(ValueError, match=r"after 1 complete epoch.*pass initial_epoch=1"):
        resumed.train(3, batches(), initial_epoch=2)


def test_a_run_stopped_inside_an_epoch_leaves_its_schedule_step_to_the_resumed_run(tmp_path):
    seed_all(1)
    reference = train(scheduled_model(), "eager", 3)
    seed_all(1)
    first = scheduled_model()
    stop = LambdaCallback(
        on_train_step_end=lambda rc: rc.original_args().cur_step_num == 30 and rc.request_stop()
    )
    config = CheckpointConfig(save_checkpoint_steps=100, append_info=["epoch_num"])
    saver = ModelCheckpoint("run", str(tmp_path), config)
    train(first, "eager", 3, callbacks=[saver, stop])  # saved by on_train_end, epoch 2 step 6
    assert first.optimizer.param_groups[0]["lr"] == pytest.approx(0.05)  # one epoch stepped
    resumed = scheduled_model()
    seed_all(999)
    params = jisu.load_checkpoint(str(tmp_path / "run-2_6.ckpt"), model=resumed)
    state = resumed.state_dict()
    assert (state["epoch"], state["step_in_epoch"], params["epoch_num"].item()) == (1, 6, 2)
    assert train(resumed, "eager", 3, initial_epoch=1) == reference[30:]


def test_a_data_loader_over_an_iterable_dataset_trains_and_knows_its_epochs_end(tmp_path):
    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            for x, y in Unsized():
                yield torch.as_tensor(np.asarray(x)), torch.as_tensor(np.asarray(y))

    loader = torch.utils.data.DataLoader(Stream(), batch_size=None)
    with pytest.raises(TypeError):
        len(loader)  # it has __len__, which fails: the size is unknown
    saver = ModelCheckpoint("run", str(tmp_path), CheckpointConfig(save_checkpoint_steps=STEPS))
    m = scheduled_model()
    m.train(2, loader, callbacks=[saver])
    assert sorted(os.listdir(tmp_path)) == ["run-1_24.ckpt", "run-2_24.ckpt"]
    for epoch in (1, 2):
        state, _ = resume_of(tmp_path / f"run-{epoch}_24.ckpt")
        assert (state["epoch"], state["step_in_epoch"]) == (epoch, 0)
