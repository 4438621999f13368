"""The ``jisu`` command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import jisu
from jisu import job
from jisu.cli import build_parser, main


def test_version_and_help():
    out = subprocess.run(
        [sys.executable, "-m", "jisu.cli", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"jisu {jisu.__version__}"
    helptext = subprocess.run(
        [sys.executable, "-m", "jisu.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "train" in helptext


@pytest.fixture
def plotted(monkeypatch):
    """The arguments of every ``plot_curves`` call of the job (which still draws)."""
    calls = []
    real = job.plot_curves

    def spy(values, path, *args, **kwargs):
        calls.append({"values": values, "path": path, "args": args, "kwargs": kwargs})
        return real(values, path, *args, **kwargs)

    monkeypatch.setattr(job, "plot_curves", spy)
    return calls


def check_png(path) -> None:
    from PIL import Image

    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 600 and image.size[1] > 200
        assert len(image.convert("L").getcolors(maxcolors=1 << 16) or []) > 10  # drawn on


def check_train_output(out: str, tmp_path, plotted, epochs: int, runs: int) -> tuple[float, dict]:
    """What every ``jisu train`` run on the digits prints and draws, whatever its length: the
    test accuracy, jisu's speed, the interleaved plain-PyTorch comparison, the profiler's
    summary and verdict, and the curves (``runs``: the plain loop's timed runs). The accuracy
    and the plotted values, for more."""
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)%", out).group(1))
    speed = re.search(
        rf"training speed: (\d+) samples/s \(the mean of epochs 2-{epochs}, (1 pipeline worker|"
        r"\d+ pipeline workers)\), waiting for data \d+% of the time",
        out,
    )
    assert speed, out
    # one throughput figure of jisu's: the profiler's line gives shares, not a second rate
    assert re.search(r"where the time went \(\d+ steps\): waiting for data", out)
    assert re.search(
        r"plain PyTorch loop .*: \d+ samples/s \(median\) -> (jisu is [0-9.]+x|jisu is slower:|"
        r"no clear difference).* "
        rf"\(median of {runs} interleaved runs; range [0-9.]+-[0-9.]+x\)",
        out,
    ), out
    assert out.count("Train epoch time:") == epochs and out.count("loss is") == epochs
    assert "where the time went" in out and re.search(r"verdict: \w+-bound", out)
    # the curves: next to the output, in the default --out folder, said where
    png = tmp_path / "jisu-train" / "curves.png"
    assert f"samples/s per epoch): {Path('jisu-train', 'curves.png')}" in out
    check_png(png)
    (call,) = plotted
    values = call["values"]
    assert [len(values[k]) for k in ("loss", "accuracy", "samples_per_second")] == [epochs] * 3
    assert f"{values['accuracy'][-1]:.2%}" == f"{accuracy:.2f}%"  # the printed accuracy
    assert all(0 <= a <= 1 for a in values["accuracy"])
    mean = sum(values["samples_per_second"][1:]) / (epochs - 1)
    assert round(mean) == pytest.approx(int(speed[1]), abs=1)
    return accuracy, call


@pytest.mark.timeout(600)  # a hang guard: ~10 s quiet, ~40 s under a heavy load of 2 cores
def test_train_main_job_runs_end_to_end_in_a_few_epochs(
    capsys, tmp_path, monkeypatch, plotted, one_intra_op_thread
):
    """The README's main job on its path (the digits packed into records, the pipeline, O2,
    sink mode, graph mode, the interleaved plain-PyTorch runs, the profiler, the curves), cut
    to 3 epochs and 2 comparison runs, on one intra-op thread: the default suite's smoke test
    of it. Graph mode's rule keeps so short a run eager (a cold compile would cost most of a
    minute, which 60 steps would never pay back unless each took seconds) and says so. The
    full 10-epoch job and the accuracy it must reach is the slow test below."""
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--epochs", "3", "--baseline-runs", "2"]) == 0
    out = capsys.readouterr().out
    assert "graph mode auto (compiled only if it pays)" in out
    assert re.search(r"GRAPH_MODE \(auto\): running eagerly: eager steps take [0-9.]+ ms", out)
    _, call = check_train_output(out, tmp_path, plotted, epochs=3, runs=2)
    assert call["values"]["loss"][-1] < call["values"]["loss"][0]  # it learns
    assert [epoch for epoch, _ in call["args"][0]] == [2, 3]  # the plain runs' epochs


@pytest.mark.timeout(600)  # a hang guard: a few seconds quiet
def test_train_without_matplotlib_trains_and_says_the_curves_were_not_drawn(
    capsys, tmp_path, monkeypatch, one_intra_op_thread
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it now fails
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--epochs", "2", "--no-baseline", "--no-graph"]) == 0
    out = capsys.readouterr().out
    assert "test accuracy:" in out
    assert 'curves: not drawn: matplotlib is not installed (pip install "jisu[plots]")' in out
    assert not (tmp_path / "jisu-train" / "curves.png").exists()


def test_train_in_a_log_says_it_compiles_and_writes_each_line_as_printed(tmp_path):
    """Output to a file (a job's log), not a terminal: the graph-mode compile is announced as a
    line (a terminal's progress bar says it there) and stdout is line-buffered, so the log is
    not silent while the first epoch compiles (torch.compile is stubbed: its minute is not
    the subject; graph_compile="always", since the rule would not compile so short a run)."""
    code = (
        "import sys, torch, jisu\n"
        "torch.compile = lambda fn, **kwargs: fn\n"
        "jisu.set_context(graph_compile='always')\n"
        "from jisu.cli import main\n"
        "rc = main(['train', '--epochs', '2', '--no-baseline'])\n"
        "print('line-buffered:', sys.stdout.line_buffering, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    log = tmp_path / "job.log"
    with open(log, "w") as out:
        done = subprocess.run(
            [sys.executable, "-c", code], stdout=out, stderr=subprocess.PIPE, text=True,
            cwd=tmp_path, timeout=600,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "line-buffered: True" in done.stderr
    lines = log.read_text().splitlines()
    notice = lines.index(job.COMPILE_NOTICE)
    assert notice < next(i for i, line in enumerate(lines) if "Train epoch time:" in line)
    assert lines.count(job.COMPILE_NOTICE) == 1  # the first step only


@pytest.mark.slow  # ~35 s quiet, 90 s seen on a loaded 2-core machine: CI's slow step runs it
@pytest.mark.timeout(600)
def test_train_main_job_learns_digits_and_reports(capsys, tmp_path, monkeypatch, plotted):
    """The README's main job at its defaults (10 epochs, O2, sink and graph mode)."""
    monkeypatch.chdir(tmp_path)
    assert main(["train"]) == 0
    accuracy, call = check_train_output(
        capsys.readouterr().out, tmp_path, plotted, epochs=10, runs=5
    )
    assert accuracy >= 95.0
    values = call["values"]
    assert values["loss"][-1] < values["loss"][0] / 3  # it learns
    plain = call["args"][0]  # (epoch, samples/s) of the interleaved plain runs
    assert [epoch for epoch, _ in plain] == [2, 4, 6, 8, 10]


def test_train_rejects_bad_options(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--amp-level", "O7"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "jisu train: error: argument --amp-level: invalid choice: 'O7' (choose from 'O0', 'O1', "
        "'O2', 'O3', 'fastest')",
        "(see 'jisu train --help')",
    ]
    for bad in (["--epochs", "0"], ["--batch-size", "-3"], ["--lr", "fast"]):
        with pytest.raises(SystemExit) as exit_:
            main(["train", *bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.splitlines()
        assert err == [
            f"jisu train: error: argument {bad[0]}: "
            + ("must be a number > 0; got 'fast'" if bad[1] == "fast" else
               f"must be an integer >= 1; got {bad[1]}"),
            "(see 'jisu train --help')",
        ]  # fmt: skip


def test_train_on_a_missing_folder_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("JISU_DEBUG", raising=False)
    assert main(["train", "--data", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "Traceback" not in err[0]
    assert err[0] == (
        f"jisu train: error: --data '{tmp_path / 'nope'}' does not exist: give an image folder "
        "(one subfolder per class) or record files"
    )
    monkeypatch.setenv("JISU_DEBUG", "1")  # the traceback, for a bug report
    with pytest.raises(FileNotFoundError):
        main(["train", "--data", str(tmp_path / "nope")])


def test_an_error_that_is_no_users_mistake_keeps_its_type(monkeypatch, capsys):
    """A ValueError raised by a bug reads as one, not as a mistake in the command line."""
    from jisu import cli

    def buggy(args):
        first, second = (1, 2, 3)  # a bug: too many values to unpack
        return first + second

    monkeypatch.delenv("JISU_DEBUG", raising=False)
    monkeypatch.setattr(cli, "_train", buggy)
    assert main(["train"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "jisu train: error: ValueError: too many values to unpack (expected 2)"
    assert "--debug" in err[1] and len(err) == 2


def test_help_shows_defaults_and_what_data_accepts(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "an image folder (one subfolder per class) or jisu/MindRecord record files" in text
    assert "passes over the training data (default: 10)" in text
    assert "samples per training step (default: 64)" in text
    assert "(default: jisu-train)" in text and "(default: None)" not in text
    parser = build_parser()  # every option of every command has its sentence
    for command in ("train", "doctor", "convert"):
        sub = parser._subparsers._group_actions[0].choices[command]
        for action in sub._actions:
            assert action.help, f"jisu {command} {action.option_strings or action.dest}"


def test_train_on_a_user_image_folder(tmp_path, capsys, plotted):
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
    out_dir = tmp_path.parent / f"{tmp_path.name}-out"
    assert main([*args, "--no-graph", "--no-baseline", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    accuracy = float(re.search(r"training accuracy: ([0-9.]+)%", out).group(1))
    assert accuracy > 90.0  # two flat colours: learnt in a few steps
    assert "plain PyTorch loop" not in out
    check_png(out_dir / "curves.png")
    assert f"per epoch): {out_dir / 'curves.png'}" in out
    (call,) = plotted
    # the training data is evaluated once, after the last epoch
    assert call["values"]["accuracy"][:3] == [None, None, None]
    assert f"{call['values']['accuracy'][3]:.2%}" == f"{accuracy:.2f}%"
    assert len(call["values"]["loss"]) == len(call["values"]["samples_per_second"]) == 4
    # no plain runs; the accuracy was measured on the training data
    assert list(call["args"][0]) == [] and call["args"][1] == "training"
