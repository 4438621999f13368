"""DistributedGradReducer and ClipByNorm: identity in one process, all-reduce (mean or sum)
under torchrun with two CPU processes; ClipByNorm against MindSpore 2.10's recorded answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import jisu
import jisu.nn as nn
from jisu.nn.wrap.grad_reducer import DistributedGradReducer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "ms_composite", "composite.json")


def test_one_process_returns_the_gradients_as_they_are():
    grads = (torch.ones(2), torch.zeros(3))
    reducer = nn.DistributedGradReducer((torch.ones(2), torch.zeros(3)))
    assert reducer is not None and DistributedGradReducer is nn.DistributedGradReducer
    out = reducer(grads)
    assert isinstance(out, tuple) and all(a is b for a, b in zip(out, grads))
    assert reducer.degree == 1  # mean=None: the context's gradients_mean, as MindSpore
    assert reducer.mean is jisu.get_auto_parallel_context("gradients_mean")
    for mean in (True, False):
        jisu.set_auto_parallel_context(gradients_mean=mean)
        try:
            assert nn.DistributedGradReducer((torch.ones(2),)).mean is mean
        finally:
            jisu.reset_auto_parallel_context()


def test_the_reducer_checks_its_arguments():
    with pytest.raises(ValueError, match="degree must be an int >= 1"):
        nn.DistributedGradReducer((), degree=0)
    with pytest.raises(ValueError, match="1 gradients for 2 parameters"):
        nn.DistributedGradReducer((torch.ones(1), torch.ones(1)))((torch.ones(1),))


def test_clip_by_norm_matches_mindspore():
    with open(FIXTURE) as f:
        layers = json.load(f)["layers"]
    rng = np.random.default_rng(45)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    for dtype in (np.float32, np.float16):
        data = torch.tensor((x * 3).astype(dtype))
        for axis in (None, (0, 1)):
            clip = nn.ClipByNorm(axis=axis)
            key = f"ClipByNorm {np.dtype(dtype).name} axis={axis}"
            for limit, name in ((1.0, " 1.0"), (100.0, " 100")):
                want = layers[key + name]
                got = clip(data, torch.tensor(limit))
                assert got.dtype == torch.float32 and list(got.shape) == want["shape"]
                np.testing.assert_allclose(got.numpy(), want["value"], rtol=1e-5, atol=1e-6)
        # axis=1: MindSpore's CPU kernel (2.0 and 2.10 alike) divides rows by norms mixed
        # from other rows; jisu follows the documented formula, per row
        x3 = (x * 3).astype(dtype).astype(np.float32)
        norms = np.sqrt((x3 * x3).sum(1, keepdims=True))
        got = nn.ClipByNorm(axis=1)(data, 1.0)
        np.testing.assert_allclose(got.numpy(), x3 / np.maximum(norms, 1.0), rtol=1e-5)
    zeros = nn.ClipByNorm()(torch.zeros(2, 2), 1.0)
    np.testing.assert_array_equal(zeros.numpy(), layers["ClipByNorm zeros"]["value"])


@pytest.mark.timeout(180)
def test_two_processes_reduce_gradients_and_keep_a_train_cell_in_sync(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        os.path.join(HERE, "grad_reducer_job.py"), str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=170)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r in ranks:
        assert r["world"] == 2 and r["reducer_flag"] is True
        assert r["mean"] == [[[1.5] * 3] * 2, [0.0, 1.5, 3.0, 4.5]]  # (1 + 2) / 2
        assert r["sum"] == [[[3.0] * 3] * 2, [0.0, 3.0, 6.0, 9.0]]
        assert r["flag"] == [1.0] and r["gathered"] == [0, 1] and r["broadcast"] == [10.0]
    assert ranks[0]["weights"] == pytest.approx(ranks[1]["weights"], rel=1e-6)
