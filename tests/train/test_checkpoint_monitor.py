"""ModelCheckpoint by a monitored value (top-k, best only, last), file names that sort in
training order, and ``latest_checkpoint``.

The monitored values come from a scripted metric (each evaluation returns the next value of
a list), so every expectation is computed from that list, independently of the callback.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest
import torch
from torch import nn

import jisu
from jisu.train import CheckpointConfig, LambdaCallback, Metric, ModelCheckpoint
from jisu.train.callbacks.checkpoint_files import EPOCH_DIGITS, STEP_DIGITS
from jisu.train.ckpt_state import RESUME_ENTRY, unpack_resume
from tests.train.test_model import data

STEPS = 2  # steps an epoch of train_data()
NAME = re.compile(r"run-(\d+)_(\d+)\.ckpt")


class Scripted(Metric):
    """A metric whose n-th evaluation returns ``values[n]``."""

    def __init__(self, values):
        self.values, self.calls = list(values), 0
        super().__init__()

    def clear(self):
        pass  # the script goes on across evaluations

    def update(self, *inputs):
        pass

    def eval(self):
        self.calls += 1
        return self.values[self.calls - 1]


def scripted_model(values, name="score"):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    return jisu.Model(net, nn.CrossEntropyLoss(), opt, metrics={name: Scripted(values)})


def train_data():
    return data(n=64, batch=32)[0]


def valid_data():
    return data(n=32, batch=32, seed=1, shuffle=False)[0]


def fit(values, config, folder, name="score", sink=False, epochs=None, **kwargs):
    m = scripted_model(values, name)
    saver = ModelCheckpoint("run", str(folder), config)
    m.fit(
        epochs or len(values), train_data(), valid_data(), callbacks=[saver],
        dataset_sink_mode=sink, **kwargs,
    )  # fmt: skip
    return m, saver


def epoch_file(folder, epoch, step=STEPS):
    return str(folder / f"run-{epoch}_{step}.ckpt")


def numbered(folder):
    """{epoch: path} of the run's numbered files in ``folder``."""
    found = {}
    for name in os.listdir(folder):
        match = NAME.fullmatch(name)
        if match:
            found[int(match[1])] = str(folder / name)
    return found


def best_epochs(values, k, mode):
    """The 1-based epochs of the ``k`` best values (NaNs never), by sorting the list."""
    usable = [i for i, v in enumerate(values) if not math.isnan(v)]
    ranked = sorted(usable, key=lambda i: values[i], reverse=mode == "max")
    return {i + 1 for i in ranked[:k]}


def state_of(path):
    """A checkpoint file's resume state, its MindSpore entries under ``"params"``."""
    params = jisu.load_checkpoint(str(path))
    state = unpack_resume(params.pop(RESUME_ENTRY), str(path))
    return dict(state, params=params)


def same_weights(state, network):
    for key, value in network.state_dict().items():
        torch.testing.assert_close(state["params"][key], value, rtol=0, atol=0)


VALUES = [0.5, 0.3, 0.8, 0.1, 0.4, 0.9, 0.2, 0.6]


# --------------------------------------------------------------------------- top k
@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("sink", [False, True], ids=["eager", "sink"])
def test_top_k_keeps_exactly_the_k_best_files(tmp_path, mode, sink):
    config = CheckpointConfig(monitor="score", mode=mode, save_top_k=3)
    _, saver = fit(VALUES, config, tmp_path, sink=sink)
    expected = best_epochs(VALUES, 3, mode)
    assert set(numbered(tmp_path)) == expected
    assert sorted(os.listdir(tmp_path)) == sorted(
        os.path.basename(epoch_file(tmp_path, e)) for e in expected
    )
    for epoch, path in numbered(tmp_path).items():
        state = state_of(path)
        assert state["monitor"] == {"name": "score", "value": VALUES[epoch - 1]}
        assert state["epoch"] == epoch  # a complete epoch: resume at the next one
    best = (min if mode == "min" else max)(range(len(VALUES)), key=VALUES.__getitem__) + 1
    assert saver.best_model_path == epoch_file(tmp_path, best)
    assert saver.best_model_score == VALUES[best - 1]
    assert saver.best_k_models == {epoch_file(tmp_path, e): VALUES[e - 1] for e in expected}


def test_the_default_with_a_monitor_keeps_the_single_best(tmp_path):
    config = CheckpointConfig(monitor="eval_score")  # "eval_<name>" finds <name>
    assert config.save_top_k == 1 and config.mode == "min"
    fit(VALUES, config, tmp_path)
    assert set(numbered(tmp_path)) == best_epochs(VALUES, 1, "min")


def test_top_k_ties_and_nans(tmp_path):
    values = [0.5, 0.3, float("nan"), 0.3, 0.2, 0.3]
    fit(values, CheckpointConfig(monitor="score", save_top_k=2), tmp_path)
    # epoch 3 (NaN) is never written; epoch 4 beats 0.5 (epoch 1 goes); epoch 5 evicts the
    # first written of the two tied 0.3 (epoch 2, as Lightning); epoch 6 only ties: not written
    assert set(numbered(tmp_path)) == {4, 5}


def test_save_top_k_minus_one_keeps_every_epoch(tmp_path):
    fit(VALUES[:4], CheckpointConfig(monitor="score", save_top_k=-1), tmp_path)
    assert set(numbered(tmp_path)) == {1, 2, 3, 4}


def test_a_restarted_run_ranks_the_files_of_the_run_before(tmp_path):
    first, second = [0.5, 0.2, 0.7], [0.3, 0.1, 0.9]
    config = CheckpointConfig(monitor="score", save_top_k=2, save_last=True)
    fit(first, config, tmp_path)
    assert set(numbered(tmp_path)) == best_epochs(first, 2, "min")
    jisu.save_checkpoint({"w": torch.zeros(1)}, epoch_file(tmp_path, 1, 1))  # no recorded value
    resumed = scripted_model(second)
    jisu.load_checkpoint(str(tmp_path / "run-last.ckpt"), model=resumed)
    assert resumed.state_dict()["epoch"] == 3
    saver = ModelCheckpoint("run", str(tmp_path), config)
    resumed.fit(6, train_data(), valid_data(), callbacks=[saver], initial_epoch=3)
    kept = {e for e, path in numbered(tmp_path).items() if path != epoch_file(tmp_path, 1, 1)}
    assert kept == best_epochs(first + second, 2, "min")  # epochs 5 (0.1) and 2 (0.2)
    assert os.path.exists(epoch_file(tmp_path, 1, 1))  # unranked files are left alone


# --------------------------------------------------------------------------- best only, modes
@pytest.mark.parametrize("keep", [0, 2])
def test_save_best_only_writes_each_improvement_and_keeps_the_newest(tmp_path, keep):
    values = [0.5, 0.6, 0.4, 0.4, float("nan"), 0.1, 0.3]
    config = CheckpointConfig(monitor="score", save_best_only=True, keep_checkpoint_max=keep)
    _, saver = fit(values, config, tmp_path)
    improvements, best = [], math.inf
    for epoch, value in enumerate(values, 1):
        if value < best:  # strictly (a NaN compares False)
            improvements.append(epoch)
            best = value
    assert improvements == [1, 3, 6]
    assert sorted(numbered(tmp_path)) == (improvements[-keep:] if keep else improvements)
    assert saver.best_model_path == epoch_file(tmp_path, 6)


def test_mode_max_keeps_the_highest_and_auto_picks_max_for_accuracies(tmp_path):
    config = CheckpointConfig(monitor="val_acc", mode="auto", save_top_k=2)
    assert config.mode == "max"
    assert CheckpointConfig(monitor="eval_loss", mode="auto").mode == "min"
    fit(VALUES, config, tmp_path, name="val_acc")
    assert set(numbered(tmp_path)) == best_epochs(VALUES, 2, "max")


def test_mode_min_on_an_accuracy_warns():
    with pytest.warns(UserWarning, match="monitor='acc' with mode='min'.*pass mode='max'"):
        CheckpointConfig(monitor="acc")


def test_monitor_loss_ranks_the_training_loss_of_each_epochs_last_step(tmp_path):
    losses = []
    record = LambdaCallback(
        on_train_step_end=lambda rc: losses.append(float(rc.original_args().net_outputs))
    )
    m = scripted_model([0.0] * 6)
    saver = ModelCheckpoint("run", str(tmp_path), CheckpointConfig(monitor="loss", save_top_k=2))
    m.train(6, train_data(), callbacks=[record, saver])  # no evaluation: the training loss
    last_of_epoch = losses[STEPS - 1 :: STEPS]
    assert len(last_of_epoch) == 6
    assert set(numbered(tmp_path)) == best_epochs(last_of_epoch, 2, "min")
    for epoch, path in numbered(tmp_path).items():
        assert state_of(path)["monitor"]["value"] == last_of_epoch[epoch - 1]


# --------------------------------------------------------------------------- save_last
def test_save_last_holds_the_final_weights_with_a_monitor(tmp_path):
    values = [0.1, 0.5, 0.9]  # the last epochs do not qualify: -last is written on its own
    config = CheckpointConfig(monitor="score", save_top_k=1, save_last=True)
    m, saver = fit(values, config, tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["run-1_2.ckpt", "run-last.ckpt"]
    last = state_of(tmp_path / "run-last.ckpt")  # checksum verified
    same_weights(last, m.network)
    assert last["cur_step_num"] == 3 * STEPS and last["epoch"] == 3
    assert saver.last_model_path == str(tmp_path / "run-last.ckpt")
    # the resume point is the latest state (epoch 3), not the best epoch's file
    assert jisu.latest_checkpoint(tmp_path, "run") == str(tmp_path / "run-last.ckpt")


def test_with_a_monitor_the_last_file_is_written_at_epoch_ends_unless_steps_are_given(
    tmp_path, monkeypatch
):
    from jisu.train.callbacks import model_checkpoint

    written = []
    real = model_checkpoint.write_checkpoint
    monkeypatch.setattr(
        model_checkpoint,
        "write_checkpoint",
        lambda path, items, resume, **options: (
            written.append((os.path.basename(path), resume["cur_step_num"]))
            or real(path, items, resume, **options)
        ),
    )
    values = [0.3, 0.2, 0.1]  # every epoch improves: its numbered file, linked as -last
    fit(values, CheckpointConfig(monitor="score", save_last=True), tmp_path)
    assert [step for _, step in written] == [STEPS, 2 * STEPS, 3 * STEPS]  # epoch ends only
    written.clear()
    steps = CheckpointConfig(monitor="score", save_last=True, save_checkpoint_steps=1)
    fit(values, steps, tmp_path / "every-step")
    assert sorted({step for _, step in written}) == list(range(1, 3 * STEPS + 1))


@pytest.mark.parametrize("links", [True, False], ids=["hard-link", "no-links"])
def test_save_last_without_a_monitor_follows_every_save(tmp_path, monkeypatch, links):
    if not links:  # a file system without hard links: the file is written a second time

        def no_links(*args, **kwargs):
            raise OSError(1, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_links)
    seen = []
    config = CheckpointConfig(save_checkpoint_steps=3, keep_checkpoint_max=1, save_last=True)
    saver = ModelCheckpoint("run", str(tmp_path), config)

    def check(rc):  # after the saver: the last file is the newest numbered one's state
        if saver.latest_ckpt_file_name:
            last = state_of(tmp_path / "run-last.ckpt")
            numbered_state = state_of(saver.latest_ckpt_file_name)
            seen.append((last["cur_step_num"], numbered_state["cur_step_num"]))

    m = scripted_model([0.0])
    m.train(2, train_data(), callbacks=[saver, LambdaCallback(on_train_step_end=check)])
    assert seen[-1] == (3, 3) and all(a == b for a, b in seen)
    same_weights(state_of(tmp_path / "run-last.ckpt"), m.network)
    assert (os.stat(tmp_path / "run-last.ckpt").st_nlink == 2) == links  # one file, two names
    # not counted by keep_checkpoint_max, no temporary left
    assert sorted(os.listdir(tmp_path)) == ["run-2_2.ckpt", "run-last.ckpt"]


# --------------------------------------------------------------------------- names
def test_zero_padded_file_names_sort_lexically_in_training_order(tmp_path):
    config = CheckpointConfig(save_checkpoint_steps=7, keep_checkpoint_max=0, zero_pad=True)
    m = scripted_model([0.0])  # 10 epochs of 10 steps: both cross from 9 to 10
    m.train(10, data(n=40, batch=4)[0], callbacks=[ModelCheckpoint("run", str(tmp_path), config)])
    names = sorted(os.listdir(tmp_path))
    pairs = [tuple(int(g) for g in NAME.fullmatch(n).groups()) for n in names]
    due = {((g - 1) // 10 + 1, (g - 1) % 10 + 1) for g in range(7, 101, 7)} | {(10, 10)}
    assert set(pairs) == due and {(7, 10), (10, 8), (10, 10)} <= due
    assert pairs == sorted(pairs)  # plain string order == (epoch, step) order
    assert names[0] == "run-" + "0" * (EPOCH_DIGITS - 1) + "1_" + "0" * (STEP_DIGITS - 1) + "7.ckpt"


def test_keep_checkpoint_max_counts_padded_and_unpadded_names(tmp_path):
    for name in ["run-1_1.ckpt", "run-1_2.ckpt", "run-3_1.ckpt"]:  # the run's earlier files
        jisu.save_checkpoint(scripted_model([0.0]), str(tmp_path / name))
        os.utime(tmp_path / name, (1, 1))  # long ago
    restarted = scripted_model([0.0])
    jisu.load_checkpoint(str(tmp_path / "run-1_2.ckpt"), model=restarted)  # a restart
    config = CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=2, zero_pad=True)
    restarted.train(2, train_data(), callbacks=[ModelCheckpoint("run", str(tmp_path), config)])
    assert sorted(os.listdir(tmp_path)) == ["run-0001_000002.ckpt", "run-0002_000002.ckpt"]


# --------------------------------------------------------------------------- latest_checkpoint
def touch(folder, name, mtime):
    (folder / name).write_bytes(b"x")
    os.utime(folder / name, (mtime, mtime))


def test_latest_checkpoint_orders_by_epoch_and_step_across_old_and_new_names(tmp_path):
    touch(tmp_path, "CKP-9_7.ckpt", 500)  # old name, epoch 9
    touch(tmp_path, "CKP-0002_000005.ckpt", 900)  # written last, but epoch 2
    touch(tmp_path, "CKP-0010_000001.ckpt", 100)  # epoch 10: the newest
    touch(tmp_path, "CKP-10_1.ckpt", 200)  # the same numbers, modified later: wins the tie
    decoys = [
        "CKP2-0099_000001.ckpt",  # other prefixes
        "CKPx-0099_000001.ckpt",
        "ckp-99_1.ckpt",
        "CKP-0099_000001.ckpt.bak",  # not a checkpoint name
        "CKP-0099_00001a.ckpt",
        ".tmp-123-abcdef12xyz.ckpt",  # a temporary file
    ]
    for name in decoys:
        touch(tmp_path, name, 1000)
    touch(tmp_path, "CKP-last.ckpt", 150)  # older than the newest numbered file
    os.mkdir(tmp_path / "CKP-0100_000001.ckpt")  # a folder, not a file
    assert jisu.latest_checkpoint(tmp_path) == str(tmp_path / "CKP-10_1.ckpt")
    assert jisu.latest_checkpoint(str(tmp_path), prefix="CKP2") == str(
        tmp_path / "CKP2-0099_000001.ckpt"
    )
    os.remove(tmp_path / "CKP-last.ckpt")  # (it would be newer than the next file)
    touch(tmp_path, "CKP-12345_000001.ckpt", 0)  # wider than the padding: still the newest
    assert jisu.latest_checkpoint(tmp_path) == str(tmp_path / "CKP-12345_000001.ckpt")


def test_latest_checkpoint_prefers_a_newer_last_file(tmp_path):
    # with a monitor the numbered files are the best epochs; later states are in -last
    touch(tmp_path, "run-2_5.ckpt", 100)
    touch(tmp_path, "run-last.ckpt", 50)  # an older -last (e.g. of an earlier run)
    assert jisu.latest_checkpoint(tmp_path, "run") == str(tmp_path / "run-2_5.ckpt")
    touch(tmp_path, "run-last.ckpt", 300)  # written after it: the state to resume from
    assert jisu.latest_checkpoint(tmp_path, "run") == str(tmp_path / "run-last.ckpt")


def test_latest_checkpoint_falls_back_to_last_then_none(tmp_path):
    assert jisu.latest_checkpoint(tmp_path / "absent") is None
    assert jisu.latest_checkpoint(tmp_path) is None
    touch(tmp_path, "other-1_1.ckpt", 1)
    assert jisu.latest_checkpoint(tmp_path, "run") is None
    touch(tmp_path, "run-last.ckpt", 1)
    assert jisu.latest_checkpoint(tmp_path, "run") == str(tmp_path / "run-last.ckpt")
    assert jisu.train.latest_checkpoint is jisu.latest_checkpoint


def test_latest_checkpoint_finds_what_a_run_wrote_and_resumes_from_it(tmp_path):
    config = CheckpointConfig(save_checkpoint_steps=3)
    saver = ModelCheckpoint("run", str(tmp_path), config)
    scripted_model([0.0]).train(3, train_data(), callbacks=[saver])
    path = jisu.latest_checkpoint(tmp_path, "run")
    assert path == saver.latest_ckpt_file_name == epoch_file(tmp_path, 3)
    assert state_of(path)["epoch"] == 3


# --------------------------------------------------------------------------- errors
def test_a_missing_metric_names_it_and_the_available_ones(tmp_path):
    config = CheckpointConfig(monitor="val_score", save_top_k=1)
    with pytest.raises(ValueError, match=r"monitor 'val_score' is not among the metrics of "
                       r"epoch 1: \['score'\]"):  # fmt: skip
        fit([0.1, 0.2], config, tmp_path)


def test_no_metrics_warns_once_and_writes_only_the_last_file(tmp_path, caplog):
    config = CheckpointConfig(monitor="eval_score", save_last=True)
    m = scripted_model([0.0])
    with caplog.at_level("WARNING", logger="jisu.train"):
        m.train(2, train_data(), callbacks=[ModelCheckpoint("run", str(tmp_path), config)])
    assert caplog.text.count("monitor 'eval_score' has no value at the end of epoch 1") == 1
    assert "use Model.fit with a valid_dataset" in caplog.text
    assert os.listdir(tmp_path) == ["run-last.ckpt"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"save_top_k": 2}, ValueError, "save_top_k=2 ranks checkpoints.*pass monitor="),
        ({"save_best_only": True}, ValueError, "save_best_only=True ranks.*pass monitor="),
        ({"monitor": "a", "save_top_k": 2, "save_best_only": True}, ValueError, "not both"),
        ({"monitor": "a", "save_top_k": -2}, ValueError, "save_top_k must be None or an int >= -1"),
        ({"monitor": "a", "save_top_k": True}, ValueError, "save_top_k must be"),
        ({"monitor": "a", "save_top_k": 0}, ValueError, "save_top_k=0 without save_last"),
        ({"monitor": "a", "mode": "best"}, ValueError, "mode must be 'min', 'max' or 'auto'"),
        ({"monitor": ""}, ValueError, "monitor must be None or a metric name"),
        ({"monitor": 3}, TypeError, "Received: monitor=3"),
        ({"save_last": 1}, TypeError, "save_last must be a bool"),
        ({"monitor": "a", "save_best_only": "yes"}, TypeError, "save_best_only must be a bool"),
        ({"keep_checkpoint_max": -1}, ValueError, "keep_checkpoint_max must be an int >= 0"),
    ],
)
def test_bad_arguments_are_refused_at_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        CheckpointConfig(**kwargs)


def test_bad_prefix_and_config_are_refused():
    with pytest.raises(ValueError, match="prefix must be a non-empty file-name prefix"):
        ModelCheckpoint(f"a{os.sep}b")
    with pytest.raises(ValueError, match="latest_checkpoint: prefix must be"):
        jisu.latest_checkpoint(".", prefix="")
    with pytest.raises(TypeError, match="config must be a CheckpointConfig"):
        ModelCheckpoint("run", ".", {"save_checkpoint_steps": 1})


def test_values_recorded_are_floats_of_the_metric(tmp_path):
    values = [np.float64(0.25), torch.tensor(0.125)]  # what metrics may return
    fit(values, CheckpointConfig(monitor="score", save_top_k=-1), tmp_path)
    recorded = [state_of(p)["monitor"]["value"] for _, p in sorted(numbered(tmp_path).items())]
    assert recorded == [0.25, 0.125]


def test_files_are_named_as_mindspore_names_them_by_default(tmp_path):
    # MindSpore's LeNet tutorial loads "checkpoint_lenet-1_1875.ckpt" by name
    config = CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=0)
    scripted_model([0.0]).train(
        2, train_data(), callbacks=[ModelCheckpoint("lenet", str(tmp_path), config)]
    )
    names = ["lenet-1_1.ckpt", "lenet-1_2.ckpt", "lenet-2_1.ckpt", "lenet-2_2.ckpt"]
    assert sorted(os.listdir(tmp_path)) == names
    with pytest.raises(TypeError, match="zero_pad must be a bool"):
        CheckpointConfig(zero_pad=1)
