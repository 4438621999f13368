"""A zoo-style data-parallel script (data_parallel_port_job.py) on 2 gloo CPU processes under
torchrun trains the same weights as 1 process on the combined batch, and each rank saves a
MindSpore-format checkpoint into its own directory.

Tolerance: rtol 1e-5, atol 1e-6 on weights of magnitude ~0.1-0.5 after 8 Momentum steps.
Two processes average two float32 means of 8 rows (the all-reduce adds, then divides by 2);
one process takes one mean of 16 rows: the sums run in another order, a few float32 ulps
(~1e-7 relative) per step, which momentum carries along; measured 4.5e-8 absolute here. The
two ranks agree bit for bit (every rank gets the same all-reduced sum).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
JOB = os.path.join(HERE, "data_parallel_port_job.py")
#: Model(net, loss, opt).train; Model(own TrainOneStepCell); each with gradients_mean=False
#: (summed over the ranks; the script's learning rate is 0.2 / group_size), as MindSpore sums
VARIANTS = ("model", "cell", "model_sum", "cell_sum")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The job under torchrun (2 processes) and as one plain process, into one folder."""
    out = tmp_path_factory.mktemp("dp_port")
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    torchrun = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        JOB, str(out),
    ]  # fmt: skip
    for command in (torchrun, [sys.executable, JOB, str(out)]):
        # generous: two processes importing torch on a busy 2-core machine; a hang ends here
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=280)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return out


def _report(out, name):
    with open(os.path.join(out, name)) as f:
        return json.load(f)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("variant", VARIANTS)
def test_two_processes_train_what_one_process_trains_on_the_combined_batch(runs, variant):
    ranks = [_report(runs, f"{variant}_world2_rank{r}.json") for r in (0, 1)]
    one = _report(runs, f"{variant}_world1_rank0.json")
    for r, report in enumerate(ranks):
        assert (report["world"], report["rank"], report["device_num"]) == (2, r, 2)
        assert report["parallel_mode"] == "data_parallel"
        assert report["gradients_mean"] is not variant.endswith("_sum")
        assert report["steps"] == one["steps"] == 4  # 32 rows per rank, 8 per step
    if variant.startswith("cell"):
        assert ranks[0]["reducer"] == ranks[1]["reducer"] == "DistributedGradReducer"
    # shuffle=False, num_shards=2: rank r reads rows r, r + 2, ...; step t of the two ranks
    # together is step t of one process (16 consecutive rows)
    for step, rows in enumerate(one["batches"]):
        parts = [set(report["batches"][step]) for report in ranks]
        assert len(parts[0]) == len(parts[1]) == 8 and not parts[0] & parts[1]
        assert sorted(parts[0] | parts[1]) == sorted(rows) == list(range(16 * step, 16 * step + 16))
    assert list(one["weights"]) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    for name, want in one["weights"].items():
        assert ranks[0]["weights"][name] == ranks[1]["weights"][name], name  # bit for bit
        np.testing.assert_allclose(ranks[0]["weights"][name], want, rtol=1e-5, atol=1e-6)


@pytest.mark.timeout(300)
def test_checkpoint_writer_picks_one_rank_per_directory(runs):
    """Own directories: every rank writes (MindSpore); a shared one, named alike, relatively
    or through a symlink: the lowest rank writes; a directory only rank 1 asks about (the
    zoo's rank-0-only callback, on another rank): it writes, and nobody waited. One process:
    it writes."""
    ranks = [_report(runs, f"writer_world2_rank{r}.json") for r in (0, 1)]
    want = {"own": True, "shared": True, "aliased": True, "alone": True, "again": True}
    assert ranks[0] == want
    assert ranks[1] == dict(want, shared=False, aliased=False, again=False)
    assert _report(runs, "writer_world1_rank0.json") == want


@pytest.mark.timeout(300)
def test_broadcast_parameters_gives_every_rank_rank_0s_weights(runs):
    ranks = [_report(runs, f"broadcast_world2_rank{r}.json") for r in (0, 1)]
    assert ranks[0]["before"] != ranks[1]["before"]  # moving_mean differs by 1 per element
    assert ranks[0]["after"] == ranks[1]["after"] == ranks[0]["before"]


def test_the_gloo_group_is_destroyed_before_the_interpreter_exits(runs):
    """A gloo group alive at interpreter teardown can abort the process (SIGABRT, "terminate
    called without an active exception"); jisu's init() destroys its group at exit."""
    for r in (0, 1):
        assert _report(runs, f"exit_world2_rank{r}.json") == {"group_alive_at_exit": False}


@pytest.mark.timeout(300)
def test_every_rank_saves_into_its_own_directory(runs):
    for variant in VARIANTS:
        for r in (0, 1):
            report = _report(runs, f"{variant}_world2_rank{r}.json")
            folder = os.path.join(runs, f"{variant}_world2", f"ckpt_{r}")
            want = [os.path.join(folder, f"net-{e}_4.ckpt") for e in (1, 2)]
            assert report["saved"] == want
            assert sorted(os.listdir(folder)) == ["net-1_4.ckpt", "net-2_4.ckpt"]


@pytest.mark.timeout(300)
def test_each_checkpoint_is_a_mindspore_ckpt_with_the_final_weights(runs):
    from jisu.train.ms_checkpoint import looks_like_ckpt
    from jisu.train.serialization import load_checkpoint

    for variant in VARIANTS:
        assert _report(runs, f"{variant}_world2_rank0.json")["saved"]
        for r in (0, 1):  # every rank that writes (rank 1 too, once it does)
            report = _report(runs, f"{variant}_world2_rank{r}.json")
            for path in report["saved"]:
                with open(path, "rb") as f:
                    assert looks_like_ckpt(f.read(64)), path
            if not report["saved"]:
                continue
            path = report["saved"][-1]  # the end of epoch 2
            params = load_checkpoint(path)
            for name, value in report["weights"].items():
                got = np.asarray(params[name].detach().cpu().numpy(), dtype=np.float64)
                np.testing.assert_array_equal(got.ravel(), value, err_msg=f"{path}: {name}")
