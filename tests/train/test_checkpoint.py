"""Checkpoints: atomic files, and kill -> resume giving the uninterrupted run's losses."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import zlib

import numpy as np
import pytest
import torch

import jisu
from jisu.train import CheckpointConfig, LambdaCallback, ModelCheckpoint, ms_checkpoint
from jisu.train.ckpt_state import RESUME_ENTRY, unpack_resume
from tests.train.test_model import data, model


def run_losses(m, epochs, sink=False, callbacks=(), initial_epoch=None):
    losses = []
    record = LambdaCallback(
        on_train_step_end=lambda rc: losses.append(float(rc.original_args().net_outputs))
    )
    m.train(
        epochs, data()[0], callbacks=[*callbacks, record], dataset_sink_mode=sink,
        initial_epoch=initial_epoch,
    )  # fmt: skip
    return losses


KILLED_RUN = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from jisu.train import CheckpointConfig, LambdaCallback, ModelCheckpoint
    from tests.train.test_model import data, model

    def kill_at_7(rc):
        if rc.original_args().cur_step_num == 7:
            os.kill(os.getpid(), signal.SIGKILL)

    checkpoints = ModelCheckpoint("run", {folder!r}, CheckpointConfig(save_checkpoint_steps=4))
    killer = LambdaCallback(on_train_step_end=kill_at_7)
    model().train(3, data()[0], callbacks=[checkpoints, killer], dataset_sink_mode={sink})
    """
)


@pytest.mark.parametrize("sink", [False, True])
def test_killed_run_resumes_with_the_uninterrupted_losses(tmp_path, sink):
    reference = run_losses(model(), 3, sink)
    assert len(reference) == 15
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = KILLED_RUN.format(root=root, folder=str(tmp_path), sink=sink)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()[-2000:]  # killed, not finished
    files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".ckpt"))
    # eager: saved after step 4; sink: the save due at step 4 waits for the sink's end (step 5)
    assert files == (["run-1_5.ckpt"] if sink else ["run-1_4.ckpt"])
    resumed = model()
    torch.manual_seed(123)
    for p in resumed.network.parameters():  # different weights: the checkpoint must restore
        torch.nn.init.normal_(p)
    jisu.load_checkpoint(str(tmp_path / files[0]), model=resumed)
    done_steps = 5 if sink else 4
    assert resumed.state_dict()["cur_step_num"] == done_steps
    losses = run_losses(resumed, 3, sink)  # from the loaded position
    np.testing.assert_allclose(losses, reference[done_steps:], rtol=1e-5, atol=1e-7)


def test_checkpoint_files_are_kept_to_the_maximum_and_hold_everything(tmp_path):
    saver = ModelCheckpoint(
        "net", str(tmp_path), CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=2)
    )
    m = model()
    m.train(2, data()[0], callbacks=[saver])
    files = sorted(os.listdir(tmp_path))
    # saved after global steps 2, 4, 6, 8, 10 (epoch 2 steps 1, 3, 5); the newest 2 kept
    assert files == ["net-2_3.ckpt", "net-2_5.ckpt"]
    path = str(tmp_path / "net-2_5.ckpt")
    resume = unpack_resume(jisu.load_checkpoint(path)[RESUME_ENTRY], path)
    assert {"optimizer", "epoch", "step_in_epoch", "dataset_state", "rng_state"} <= set(resume)
    assert resume["epoch"] == 2 and resume["step_in_epoch"] == 0  # a complete epoch
    fresh = model()
    jisu.load_checkpoint(path, net=fresh.network)
    for a, b in zip(fresh.network.parameters(), m.network.parameters()):
        torch.testing.assert_close(a, b)


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "a.ckpt"
    jisu.save_checkpoint({"w": torch.ones(2)}, str(path))

    def broken(f, items, crc_check):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(ms_checkpoint, "write_ckpt", broken)
    with pytest.raises(OSError, match="disk full"):
        jisu.save_checkpoint({"w": torch.zeros(2)}, str(path))
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["a.ckpt"]  # no temporary file left
    assert jisu.load_checkpoint(str(path))["w"].tolist() == [1.0, 1.0]


def test_keep_checkpoint_max_counts_the_files_of_earlier_runs(tmp_path):
    foreign = ["net2-1_1.ckpt", "netx-1_1.ckpt", "net-1_1.ckpt.bak", "net-last.txt", "n.txt"]
    for name in foreign:
        (tmp_path / name).write_bytes(b"not ours")
    config = CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=3)
    model().train(2, data()[0], callbacks=[ModelCheckpoint("net", str(tmp_path), config)])
    restarted = model()  # a new process: a fresh ModelCheckpoint in the same folder
    jisu.load_checkpoint(str(tmp_path / "net-2_5.ckpt"), model=restarted)
    saver = ModelCheckpoint("net", str(tmp_path), config)
    restarted.train(4, data()[0], callbacks=[saver])
    ours = sorted(set(os.listdir(tmp_path)) - set(foreign))
    # the newest 3 of 10
    assert ours == ["net-4_1.ckpt", "net-4_3.ckpt", "net-4_5.ckpt"]
    assert set(foreign) <= set(os.listdir(tmp_path))  # other prefixes and files untouched
    assert saver.latest_ckpt_file_name == str(tmp_path / "net-4_5.ckpt")


def test_keep_checkpoint_max_keeps_the_newest_written_not_the_highest_numbered(tmp_path):
    hour_ago = time.time() - 3600
    jisu.save_checkpoint(model(), str(tmp_path / "net-1_5.ckpt"))  # where the restart begins
    for name in ["net-9_1.ckpt", "net-9_2.ckpt", "net-1_5.ckpt"]:  # the abandoned run got further
        if name != "net-1_5.ckpt":
            (tmp_path / name).write_bytes(b"old")
        os.utime(tmp_path / name, (hour_ago, hour_ago))
    restarted = model()
    jisu.load_checkpoint(str(tmp_path / "net-1_5.ckpt"), model=restarted)
    config = CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=2)
    restarted.train(1, data()[0], callbacks=[ModelCheckpoint("net", str(tmp_path), config)])
    assert sorted(os.listdir(tmp_path)) == ["net-1_4.ckpt", "net-1_5.ckpt"]


def test_resuming_with_the_wrong_initial_epoch_is_refused(tmp_path):
    m = model()
    m.train(1, data()[0], callbacks=[ModelCheckpoint("c", str(tmp_path))])
    m2 = model()
    jisu.load_checkpoint(str(tmp_path / "c-1_5.ckpt"), model=m2)
    assert m2.state_dict()["epoch"] == 1
    with pytest.raises(ValueError, match="pass initial_epoch=1"):
        m2.train(2, data()[0], initial_epoch=0)


def test_graph_mode_gives_the_same_losses_as_pynative():
    eager = run_losses(model(), 1)
    jisu.set_context(mode=jisu.GRAPH_MODE)
    try:
        compiled = run_losses(model(), 1)
    finally:
        jisu.set_context(mode=jisu.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-5)


KILLED_SAVE = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from jisu.files import atomic_write

    with atomic_write(os.path.join({folder!r}, "run-1_4.ckpt")) as f:
        f.write(b"half a checkpoint" * 1000)
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of a save
    """
)


def test_a_killed_saves_partial_file_is_removed_by_the_next_run(tmp_path, caplog):
    from jisu.files import host_tag

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = KILLED_SAVE.format(root=root, folder=str(tmp_path))
    killed = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    _, err = killed.communicate(timeout=120)
    assert killed.returncode == -9, err.decode()[-2000:]
    (partial,) = os.listdir(tmp_path)  # what the kill left behind
    assert partial.startswith(f".tmp-{killed.pid}-{host_tag()}") and partial.endswith(".ckpt")
    live = f".tmp-{os.getpid()}-{host_tag()}abcdefgh.ckpt"  # a save running in this process
    elsewhere = f".tmp-{killed.pid}-00000000abcdefgh.ckpt"  # a dead pid, but another host's
    for name in (live, elsewhere):
        (tmp_path / name).write_bytes(b"in progress")
    with caplog.at_level("WARNING", logger="jisu.train"):
        model().train(1, data()[0], callbacks=[ModelCheckpoint("run", str(tmp_path))])
    assert partial not in os.listdir(tmp_path)
    assert {live, elsewhere} <= set(os.listdir(tmp_path))  # never a live or foreign writer's
    assert f"removed 1 partial checkpoint file(s) of killed runs from '{tmp_path}'" in caplog.text
    assert partial in caplog.text


def test_append_info_adds_the_epoch_step_and_values_mindspore_scripts_read(tmp_path):
    train, _, _ = data(n=64, batch=16)  # 4 steps per epoch
    config = CheckpointConfig(
        save_checkpoint_steps=4,
        append_info=["epoch_num", {"step_num": 0, "lr_tag": "cosine", "warm": 0.5}],
        integrated_save=True,
        async_save=False,
    )
    m = model()
    m.train(2, train, callbacks=[ModelCheckpoint("net", str(tmp_path), config)])
    state = jisu.load_checkpoint(str(tmp_path / "net-2_4.ckpt"))
    # the model zoo's resume idiom: a 0-d tensor read back with .asnumpy().item()
    epoch = state.get("epoch_num", jisu.Tensor(0, jisu.int32)).asnumpy().item()
    assert epoch == 2 and state["step_num"].item() == 8
    # MindSpore 2.10's ModelCheckpoint writes both as Int64 scalars (run once from /tmp)
    assert state["epoch_num"].dtype == state["step_num"].dtype == torch.int64
    assert state["epoch_num"].shape == () and state["epoch_num"].name == "epoch_num"
    assert state["lr_tag"] == "cosine" and state["warm"].item() == 0.5
    assert jisu.load_checkpoint(str(tmp_path / "net-1_4.ckpt"))["epoch_num"].item() == 1
    m.train(3, train, callbacks=[ModelCheckpoint("plain", str(tmp_path))])
    assert "epoch_num" not in jisu.load_checkpoint(str(tmp_path / "plain-3_4.ckpt"))
    with pytest.raises(ValueError, match="'epoch_num' or 'step_num'"):
        CheckpointConfig(append_info=["epoch"])
    with pytest.raises(TypeError, match="append_info dicts map str"):
        CheckpointConfig(append_info=[{"net": object()}])
    with pytest.raises(ValueError, match="enc_key is not supported"):
        CheckpointConfig(enc_key=b"0" * 16)


def test_save_checkpoint_of_a_train_step_saves_its_network_and_optimizer(tmp_path):
    """The model zoo's EvalCallBack: ``save_checkpoint(cb_params.train_network, path)``."""
    m = model()
    train, _, _ = data(n=32, batch=16)
    m.train(1, train)
    path = str(tmp_path / "best.ckpt")
    jisu.save_checkpoint(m.train_network, path)
    state = jisu.load_checkpoint(path)
    net = m.train_network.network
    for name, value in net.state_dict().items():
        assert torch.equal(state[name], value), name
    fresh = model()
    param_not_load, _ = jisu.load_param_into_net(fresh.network, state)
    assert param_not_load == []
    assert all(torch.equal(a, b) for a, b in zip(fresh.network.parameters(), net.parameters()))
    jisu.load_checkpoint(path, net=fresh.network, optimizer=fresh.optimizer)
    loaded, saved = fresh.optimizer.state_dict(), m.optimizer.state_dict()
    for key, value in saved["state"][0].items():
        assert torch.equal(loaded["state"][0][key], value), key


@pytest.mark.parametrize("crc", [False, True])
def test_model_checkpoint_writes_mindspores_crc_trailer_when_asked(tmp_path, crc):
    # MindSpore's default is False; MindSpore 2.0.0 cannot parse a file with the trailer
    config = CheckpointConfig(save_checkpoint_steps=100, crc_check=crc)
    m = model()
    m.train(1, data()[0], callbacks=[ModelCheckpoint("c", str(tmp_path), config)])
    data_bytes = (tmp_path / "c-1_5.ckpt").read_bytes()
    assert (data_bytes[-17:-10] == b"crc_num") == crc
    if crc:
        assert int.from_bytes(data_bytes[-10:], "big") == zlib.crc32(data_bytes[:-17])
    with pytest.raises(TypeError, match="crc_check must be a bool"):
        CheckpointConfig(crc_check="yes")
