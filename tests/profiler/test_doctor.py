"""``jisu doctor`` on a user's pipeline and training, given as file.py:function."""

from __future__ import annotations

import shutil
import subprocess
import textwrap

import cv2
import pytest

from jisu.cli import main

USER_CODE = textwrap.dedent(
    """
    import time
    import numpy as np
    import torch
    from torch import nn
    import jisu
    import jisu.dataset as ds

    def slow(x):
        time.sleep(0.004)
        return x

    def pipeline():
        data = ds.NumpySlicesDataset(np.arange(400, dtype=np.float32), shuffle=False)
        return data.map(slow, num_parallel_workers=1).batch(4)

    def train():
        x = np.random.default_rng(0).standard_normal((256, 8)).astype(np.float32)
        y = (x[:, 0] > 0).astype(np.int64)
        data = ds.NumpySlicesDataset({"x": x, "y": y}).map(slow, "x").batch(8)
        net = nn.Linear(8, 2)
        model = jisu.Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
        return model, data
    """
)


def test_doctor_names_the_slow_stage_of_a_pipeline(tmp_path, capsys):
    path = tmp_path / "user_pipeline.py"
    path.write_text(USER_CODE)
    report = tmp_path / "report.html"
    args = ["doctor", "--pipeline", f"{path}:pipeline", "--batches", "12"]
    assert main([*args, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "pipeline: 12 batches" in out and "stage batch" in out
    assert "verdict: bottleneck batch" in out  # the map runs fused into the batch stage
    assert "num_parallel_workers" in out or "a worker per CPU" in out


def test_doctor_finds_an_input_bound_training_run(tmp_path, capsys):
    path = tmp_path / "user_train.py"
    path.write_text(USER_CODE)
    report = tmp_path / "report.html"
    args = ["doctor", "--train", f"{path}:train", "--steps", "4", "--batches", "8"]
    assert main([*args, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "where the time went" in out and "verdict: input-bound" in out
    assert "stage batch" in out  # the training data set's pipeline is measured too
    page = report.read_text()
    assert 'id="chart-steps"' in page and 'id="chart-stages"' in page
    assert "Training: input-bound" in page


def test_doctor_needs_exactly_one_target(capsys):
    assert main(["doctor"]) == 2
    assert "exactly one of --pipeline and --train" in capsys.readouterr().err


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium (.ci/run installs it)")
def test_report_renders_in_headless_chromium(tmp_path):
    path = tmp_path / "user_pipeline.py"
    path.write_text(USER_CODE)
    report = tmp_path / "report.html"
    args = ["doctor", "--pipeline", f"{path}:pipeline", "--batches", "12"]
    assert main([*args, "--report", str(report)]) == 0
    url = report.as_uri()
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,1400"]
    shot = tmp_path / "shot.png"
    subprocess.run([*flags, f"--screenshot={shot}", url], capture_output=True, timeout=120)
    image = cv2.imread(str(shot))
    assert image is not None and image.shape[:2] == (1400, 1200)
    assert image.std() > 10  # not blank: text, charts
    assert (image[:, :, 2].astype(int) - image[:, :, 0] > 60).any()  # the orange busy bars
    dom = subprocess.run(
        [*flags, "--dump-dom", url], capture_output=True, text=True, timeout=120
    ).stdout
    assert 'id="verdict"' in dom and "bottleneck batch" in dom
    assert 'id="chart-stages"' in dom and 'id="chart-queue"' in dom
    assert dom.count("<svg") >= 2
