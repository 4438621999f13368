"""No run deletes or overwrites another run's checkpoints: a fresh ModelCheckpoint in a folder
that holds files of its prefix renames its prefix as MindSpore does (``CKP`` -> ``CKP_1``,
the rule recorded from MindSpore 2.10 in tests/fixtures/checkpoint_prefix/), with a warning;
a run resumed with ``load_checkpoint(path, model=...)`` from one of those files continues
them (numbering and ``keep_checkpoint_max`` rotation of its own files only)."""

from __future__ import annotations

import hashlib
import json
import logging
import os

import pytest

import jisu
from jisu.train import CheckpointConfig, ModelCheckpoint
from jisu.train.callbacks.checkpoint_files import free_prefix, resumed_prefix
from tests.train.test_model import data, model

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "checkpoint_prefix")
with open(os.path.join(HERE, "mindspore_prefixes.json")) as _f:
    MS_CASES = json.load(_f)["cases"]


def hashes(folder) -> dict[str, str]:
    return {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in sorted(os.listdir(folder))
    }


def run(folder, epochs=1, prefix="CKP", keep=5, resume=None):
    """Train a fresh model (resumed from ``resume``) for ``epochs`` with a checkpoint every
    step (5 steps an epoch); return the callback."""
    m = model()
    if resume is not None:
        jisu.load_checkpoint(str(resume), model=m)
    config = CheckpointConfig(save_checkpoint_steps=1, keep_checkpoint_max=keep)
    saver = ModelCheckpoint(prefix, str(folder), config)
    m.train(epochs, data()[0], callbacks=[saver])
    return saver


@pytest.mark.parametrize("case", MS_CASES, ids=lambda c: ",".join(c["files"]) or "empty")
def test_the_renaming_rule_is_mindspores(tmp_path, case):
    for name in case["files"]:
        (tmp_path / name).write_bytes(b"")
    assert free_prefix(str(tmp_path), "CKP") == case["prefix"]


def test_a_fresh_run_touches_none_of_another_runs_files(tmp_path, caplog):
    first = run(tmp_path)  # 5 steps, 5 kept: CKP-1_1 .. CKP-1_5
    assert first.prefix == "CKP"
    earlier = hashes(tmp_path)
    assert sorted(earlier) == [f"CKP-1_{i}.ckpt" for i in range(1, 6)]
    with caplog.at_level(logging.WARNING, logger="jisu.train"):
        second = run(tmp_path, epochs=2)  # an unrelated run, same default prefix
    assert second.prefix == "CKP_1"
    assert "already holds checkpoints with prefix 'CKP'" in caplog.text
    assert "'CKP_1'" in caplog.text
    now = hashes(tmp_path)
    assert {name: now[name] for name in earlier} == earlier  # none deleted nor rewritten
    assert sorted(set(now) - set(earlier)) == [f"CKP_1-2_{i}.ckpt" for i in range(1, 6)]
    assert second.latest_ckpt_file_name == str(tmp_path / "CKP_1-2_5.ckpt")
    third = run(tmp_path)
    assert third.prefix == "CKP_2"
    assert {name: hashes(tmp_path)[name] for name in now} == now


def test_a_resumed_run_continues_its_own_files(tmp_path, caplog):
    run(tmp_path, keep=3)  # CKP-1_3 .. CKP-1_5 kept
    other = run(tmp_path, keep=3)  # another run: CKP_1-...
    others = {k: v for k, v in hashes(tmp_path).items() if k.startswith("CKP_1-")}
    assert other.prefix == "CKP_1" and len(others) == 3
    latest = jisu.latest_checkpoint(str(tmp_path), "CKP")
    assert os.path.basename(latest) == "CKP-1_5.ckpt"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jisu.train"):
        restarted = run(tmp_path, epochs=2, keep=3, resume=latest)
    assert restarted.prefix == "CKP" and "already holds" not in caplog.text
    now = hashes(tmp_path)
    # its numbering continues, its rotation removed its own older files only
    assert sorted(k for k in now if k.startswith("CKP-")) == [f"CKP-2_{i}.ckpt" for i in (3, 4, 5)]
    assert {k: now[k] for k in others} == others


def test_a_restart_of_a_renamed_run_keeps_its_prefix(tmp_path, caplog):
    run(tmp_path)
    renamed = run(tmp_path, keep=2)
    assert renamed.prefix == "CKP_1"
    first = {k: v for k, v in hashes(tmp_path).items() if k.startswith("CKP-")}
    with caplog.at_level(logging.WARNING, logger="jisu.train"):
        restarted = run(tmp_path, 2, keep=2, resume=tmp_path / "CKP_1-1_5.ckpt")
    assert restarted.prefix == "CKP_1"  # not CKP_2: the same run
    assert "continues that run's files, with prefix 'CKP_1'" in caplog.text
    now = hashes(tmp_path)
    assert sorted(k for k in now if k.startswith("CKP_1-")) == ["CKP_1-2_4.ckpt", "CKP_1-2_5.ckpt"]
    assert {k: now[k] for k in first} == first


def test_a_run_resumed_from_elsewhere_is_a_fresh_run_here(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    run(tmp_path / "a")
    run(tmp_path / "b")
    before = hashes(tmp_path / "b")
    moved = run(tmp_path / "b", 2, resume=tmp_path / "a" / "CKP-1_5.ckpt")
    assert moved.prefix == "CKP_1"
    assert {k: hashes(tmp_path / "b")[k] for k in before} == before


def test_resumed_prefix():
    folder = os.path.realpath("/tmp/x")
    assert resumed_prefix(os.path.join(folder, "CKP-3_1.ckpt"), folder, "CKP") == "CKP"
    assert resumed_prefix(os.path.join(folder, "CKP-last.ckpt"), folder, "CKP") == "CKP"
    assert resumed_prefix(os.path.join(folder, "CKP_4-3_1.ckpt"), folder, "CKP") == "CKP_4"
    assert resumed_prefix(os.path.join(folder, "CKP2-3_1.ckpt"), folder, "CKP") is None
    assert resumed_prefix(os.path.join(folder, "run.ckpt"), folder, "CKP") is None
    assert resumed_prefix("/elsewhere/CKP-3_1.ckpt", folder, "CKP") is None
    assert resumed_prefix(None, folder, "CKP") is None
