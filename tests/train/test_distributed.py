"""Data parallel under torchrun: two CPU processes (gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.mark.timeout(180)
def test_two_processes_train_disjoint_equal_shards_in_sync_and_write_one_checkpoint(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        os.path.join(HERE, "torchrun_job.py"), str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=170)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    for epoch in range(2):  # 8 batches of 32 rows: 4 per rank per epoch
        parts = [r["batches"][epoch * 4 : epoch * 4 + 4] for r in ranks]
        rows = [sorted(int(v) for batch in part for v in batch) for part in parts]
        assert len(rows[0]) == len(rows[1]) == 128
        assert not set(rows[0]) & set(rows[1])
        assert sorted(rows[0] + rows[1]) == list(range(256))
    assert ranks[0]["weights"] == pytest.approx(ranks[1]["weights"], rel=1e-6)  # in sync
    assert len(ranks[0]["saved"]) == 1 and ranks[1]["saved"] == []
    assert os.listdir(tmp_path / "ckpt") == [os.path.basename(ranks[0]["saved"][0])]
    steps = [line for line in done.stdout.splitlines() if line.startswith("epoch:")]
    assert len(steps) == 8  # LossMonitor on rank 0 only: 2 epochs x 4 steps


@pytest.mark.timeout(180)
def test_the_ranks_train_at_rank_0s_measured_level(tmp_path):
    """``amp_level="fastest"`` under torchrun: each rank's own timing would choose another
    level (rank 0: O2, rank 1: O0, by a fake clock); all train at rank 0's choice, in sync."""
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        os.path.join(HERE, "torchrun_fastest_job.py"), str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=170)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["level"] for r in ranks] == ["O2", "O2"]
    assert ranks[1]["reason"] == ranks[0]["reason"]
    assert "O2 10.0 ms" in ranks[0]["reason"]
    assert ranks[0]["weights"] == pytest.approx(ranks[1]["weights"], rel=1e-6)  # in sync


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("job", "level", "figure"), [("conv", "O0", "O0 channels_last 5.0"), ("conv-o2", "O2", "")]
)
def test_the_ranks_train_in_rank_0s_measured_layout(tmp_path, job, level, figure):
    """``memory_format="fastest"`` under torchrun, with the level measured too (rank 0 finds O0
    channels-last fastest) or fixed at O2; rank 1 would keep the contiguous layout. Both ranks
    train channels-last, the step wrapped again over the converted weights (a
    DistributedDataParallel built over the NCHW ones warns of grad strides), in sync."""
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        os.path.join(HERE, "torchrun_fastest_job.py"), str(tmp_path), job,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=170)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Grad strides do not match bucket view strides" not in done.stderr
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [(r["level"], r["memory_format"]) for r in ranks] == [(level, "channels_last")] * 2
    assert ranks[1]["reason"] == ranks[0]["reason"]
    assert figure in ranks[0]["reason"]
    assert ranks[0]["weights"] == pytest.approx(ranks[1]["weights"], rel=1e-6)  # in sync


def test_init_without_a_launcher_joins_nothing_and_checks_its_argument():
    from jisu.communication import get_group_size, get_rank, init

    for name in (None, "nccl", "hccl", "mccl", "gloo"):
        init(name)
    assert (get_rank(), get_group_size()) == (0, 1)
    with pytest.raises(TypeError, match="init: backend_name must be a str"):
        init(1)
    with pytest.raises(ValueError, match="init: backend_name must be one of"):
        init("xla")


def test_init_reads_mindspore_backend_names_on_this_platform(monkeypatch):
    """MindSpore's names: "hccl" and None, the platform's backend; "mccl": gloo; "nccl"
    without CUDA: gloo and a warning that says what to call instead."""
    import torch

    import jisu.communication.management as management
    import jisu.context
    from jisu import distributed

    joined = []
    # the platform alone decides: no device_target another test may have set
    monkeypatch.setattr(jisu.context, "get_context", lambda key: None)
    monkeypatch.setattr(distributed, "world_size_from_env", lambda: 2)
    monkeypatch.setattr(distributed, "init", joined.append)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in (None, "hccl", "mccl", "gloo"):
        management.init(name)
    with pytest.warns(UserWarning, match=r"NCCL needs CUDA.*with gloo.*call init\(\)"):
        management.init("nccl")
    assert joined == ["gloo"] * 5
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    joined.clear()
    management.init("nccl")
    management.init("hccl")
    assert joined == ["nccl", "nccl"]


def test_the_default_backend_follows_device_target(monkeypatch):
    import torch

    import jisu.context
    from jisu import distributed

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for target, want in (("CPU", "gloo"), ("GPU", "nccl"), (None, "nccl")):
        monkeypatch.setattr(jisu.context, "get_context", lambda key, t=target: t)
        assert distributed.default_backend() == want
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert distributed.default_backend() == "gloo"


def test_one_process_writes_its_checkpoints(tmp_path):
    from jisu.distributed import checkpoint_writer

    assert bool(checkpoint_writer(str(tmp_path))) is True


def test_init_refuses_a_process_another_launcher_started_as_one_of_several(monkeypatch):
    """The zoo's run_distribute_train.sh (RANK_SIZE), mpirun or msrun: without torchrun each
    process would train alone; init says which torchrun command to use instead."""
    from jisu.communication import init

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    for name in ("RANK_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MS_WORKER_NUM"):
        with monkeypatch.context() as env:
            env.setenv(name, "8")
            with pytest.raises(RuntimeError, match=rf"{name}=8.*torchrun --nproc_per_node=8"):
                init()
    monkeypatch.setenv("RANK_SIZE", "1")  # the zoo's one-device runs set it too
    init()
