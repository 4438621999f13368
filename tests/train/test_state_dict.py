"""``Model.state_dict()`` / ``Model.load_state_dict()``: the training state in memory, owned
by the Model. A state taken after training, loaded into a fresh Model, continues with the
uninterrupted run's losses bit for bit, also through ``save_checkpoint(model)`` /
``load_checkpoint(path, model=)``; ModelCheckpoint writes exactly that state."""

from __future__ import annotations

import pytest
import torch

import jisu
from jisu.train import CheckpointConfig, ModelCheckpoint
from jisu.train.ckpt_state import RESUME_ENTRY, unpack_resume
from tests.train.test_model import data, model
from tests.train.test_resume import noisy_model, seed_all, train

POSITION = {"epoch", "step_in_epoch", "cur_step_num", "dataset_state", "rng_state"}


@pytest.mark.parametrize("sink", [False, True], ids=["eager", "sink"])
def test_a_state_dict_taken_after_two_epochs_continues_the_run_exactly(tmp_path, sink):
    seed_all(1)
    reference = train(noisy_model("torch"), 4, sink, -1)  # 5 steps an epoch

    seed_all(1)
    first = noisy_model("torch")
    train(first, 2, sink, -1)
    state = first.state_dict()
    assert {"network", "optimizer", *POSITION} <= set(state)
    assert (state["epoch"], state["step_in_epoch"], state["cur_step_num"]) == (2, 0, 10)
    path = str(tmp_path / "two-epochs.ckpt")
    jisu.save_checkpoint(first, path)

    resumed = noisy_model("torch")
    seed_all(999)  # only the state can bring the generators back
    resumed.load_state_dict(state)
    assert train(resumed, 4, sink, -1, initial_epoch=2) == reference[10:]  # bit for bit
    from_file = noisy_model("torch")
    seed_all(999)
    jisu.load_checkpoint(path, model=from_file)
    assert train(from_file, 4, sink, -1) == reference[10:]  # bit for bit


def test_a_loaded_state_reads_back_as_loaded_until_training_resumes():
    trained = model()
    trained.train(1, data()[0])
    state = trained.state_dict()
    fresh = model()
    assert set(fresh.state_dict()) == {"network", "optimizer"}  # never trained: no position
    fresh.load_state_dict(state)
    again = fresh.state_dict()
    assert {key: again[key] for key in POSITION} == {key: state[key] for key in POSITION}
    for name, value in state["network"].items():
        assert torch.equal(again["network"][name], value)


def test_model_checkpoint_writes_the_models_state_dict(tmp_path):
    m = model()
    saver = ModelCheckpoint("m", str(tmp_path), CheckpointConfig(save_checkpoint_steps=100))
    m.train(1, data()[0], callbacks=[saver])  # saved once, by on_train_end
    path = saver.latest_ckpt_file_name
    written = jisu.load_checkpoint(path)
    assert list(written)[:4] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert list(written)[-1] == RESUME_ENTRY
    for (name, value), param in zip(m.network.state_dict().items(), written.values()):
        assert torch.equal(param, value), name
    resume = unpack_resume(written[RESUME_ENTRY], path)
    state = m.state_dict()
    assert {k: resume[k] for k in POSITION - {"rng_state"}} == {
        k: state[k] for k in POSITION - {"rng_state"}
    }
    assert torch.equal(resume["rng_state"]["torch"], state["rng_state"]["torch"])
    fresh = model()
    jisu.load_checkpoint(path, model=fresh)
    again = fresh.state_dict()
    assert {k: again[k] for k in POSITION - {"rng_state"}} == {
        k: state[k] for k in POSITION - {"rng_state"}
    }
    assert again["optimizer"]["state"].keys() == state["optimizer"]["state"].keys()
    for key, value in state["optimizer"]["state"][0].items():
        assert torch.equal(again["optimizer"]["state"][0][key], value), key


def test_resuming_from_a_state_dict_checks_an_explicit_epoch():
    trained = model()
    trained.train(2, data()[0])
    fresh = model()
    fresh.load_state_dict(trained.state_dict())
    with pytest.raises(ValueError, match="pass initial_epoch=2"):
        fresh.train(3, data()[0], initial_epoch=0)  # an explicit epoch is checked
    with pytest.raises(ValueError, match="train to more than 2 epochs"):
        fresh.train(2, data()[0])


def test_a_checkpoint_of_the_earlier_format_still_resumes_exactly(tmp_path):
    """jisu's earlier files (a torch.save zip of the nested state with a checksum comment,
    written here from that documented format) load read-only through load_checkpoint."""
    from tests.train.test_checkpoint_safety import torch_bytes, with_checksum

    seed_all(1)
    reference = train(noisy_model("torch"), 4, False, -1)
    seed_all(1)
    first = noisy_model("torch")
    train(first, 2, False, -1)
    path = tmp_path / "old.ckpt"
    path.write_bytes(
        with_checksum(torch_bytes(dict(first.state_dict(), epoch_num=torch.tensor(2))))
    )
    resumed = noisy_model("torch")
    seed_all(999)
    flat = jisu.load_checkpoint(str(path), model=resumed)
    assert flat["epoch_num"].item() == 2 and "hidden.0.weight" in flat  # torch's names
    assert train(resumed, 4, False, -1) == reference[10:]  # bit for bit
