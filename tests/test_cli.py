"""The ``jisu`` command."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import jisu
from jisu.cli import main


def test_version_and_help():
    out = subprocess.run(
        [sys.executable, "-m", "jisu.cli", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"jisu {jisu.__version__}"
    helptext = subprocess.run(
        [sys.executable, "-m", "jisu.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "train" in helptext


def test_train_main_job_learns_digits_and_reports(capsys):
    """The README's main job at its defaults (10 epochs, O2, sink and graph mode)."""
    assert main(["train"]) == 0
    out = capsys.readouterr().out
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)%", out).group(1))
    assert accuracy >= 95.0
    assert re.search(r"training speed: \d+ samples/s .* waiting for data \d+% of the time", out)
    assert re.search(r"plain PyTorch loop .*: \d+ samples/s -> jisu is [0-9.]+x", out)
    assert out.count("Train epoch time:") == 10 and out.count("loss is") == 10
    assert "where the time went" in out and re.search(r"verdict: \w+-bound", out)


def test_train_rejects_bad_options():
    with pytest.raises(SystemExit):
        main(["train", "--amp-level", "O7"])


def test_train_on_a_user_image_folder(tmp_path, capsys):
    import cv2
    import numpy as np

    rng = np.random.default_rng(0)
    for c in range(2):
        (tmp_path / f"class{c}").mkdir()
        for i in range(40):
            image = np.full((36, 44, 3), 200 * c, np.uint8) + rng.integers(
                0, 40, (36, 44, 3), np.uint8
            )
            cv2.imwrite(str(tmp_path / f"class{c}" / f"{i}.png"), image)
    args = ["train", "--data", str(tmp_path), "--epochs", "4", "--batch-size", "16"]
    assert main([*args, "--no-graph", "--no-baseline"]) == 0
    out = capsys.readouterr().out
    accuracy = float(re.search(r"training accuracy: ([0-9.]+)%", out).group(1))
    assert accuracy > 90.0  # two flat colours: learnt in a few steps
    assert "plain PyTorch loop" not in out
