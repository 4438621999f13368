"""The ``jisu`` command."""

from __future__ import annotations

import subprocess
import sys

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


def test_train_runs_the_pipeline_demo(capsys):
    assert main(["train", "--samples", "64", "--batch-size", "16", "--size", "32"]) == 0
    out = capsys.readouterr().out
    assert "batches: 4 of image (16, 3, 32, 32) torch.float32" in out
    assert "rows/s through" in out and "first batch after" in out
