"""The progress bar: it moves during a sink with no host read, shows the last known loss and a
notice while GRAPH_MODE compiles, and the run's other output never shares its line.

The terminal tests run a training script under a pseudo-terminal and read what a terminal
would show: :func:`screen_lines` replays the raw output (``\\r`` back to column 0, characters
overwrite, a newline leaves the line as it stands), so a callback line that shared the bar's
line would carry the bar's remains and fail to match its exact format."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode

import jisu
from jisu.train import LossMonitor, ProgressBar
from jisu.train import callback as callback_module
from tests.train.test_model import data, model

ROOT = Path(__file__).resolve().parents[2]
STEPS = 40  # steps per epoch, and so per sink: 320 rows in batches of 8

SCRIPT = r"""
import logging, sys, warnings
import numpy as np, torch
from torch import nn
import jisu, jisu.dataset as ds
from jisu.train import LambdaCallback, LossMonitor, ProgressBar, TimeMonitor

sink = sys.argv[1] == "sink"
warnings.simplefilter("always")
showwarning, last_resort = warnings.showwarning, logging.lastResort
rng = np.random.default_rng(0)
x = rng.standard_normal((320, 8)).astype(np.float32)
y = x[:, :3].argmax(1).astype(np.int64)
data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
model = jisu.Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))

def noisy(run_context):
    if run_context.original_args().cur_step_num == 20:
        warnings.warn("a warning during training")
        logging.getLogger("jisu.test").warning("a log record during training")

bar = ProgressBar(miniters=1, mininterval=0)  # a redraw at every step
callbacks = [LossMonitor(), TimeMonitor(), LambdaCallback(on_train_step_end=noisy), bar]
model.train(2, data, callbacks=callbacks, dataset_sink_mode=sink)
restored = warnings.showwarning is showwarning and logging.lastResort is last_resort
print(f"restored: {restored}")

def fail(run_context):
    if run_context.original_args().cur_step_num == 3:
        raise RuntimeError("stop here")

try:  # the bar Model adds itself on a terminal
    model.train(1, data, callbacks=[LambdaCallback(on_train_step_end=fail)], dataset_sink_mode=sink)
except RuntimeError:
    print("after the error")
"""

LOSS_LINE = re.compile(r"epoch: (\d+) step: (\d+), loss is (-?\d+\.\d+(?:e-?\d+)?)")
TIME_LINE = re.compile(r"Train epoch time: \d+\.\d{3} ms, per step time: \d+\.\d{3} ms")
COUNT = re.compile(rf"\|\s*(\d+)/{STEPS} \[")


def run_in_terminal(args: list[str], timeout: float = 100.0) -> str:
    """What ``python args`` writes to a 160-column pseudo-terminal (stdout and stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_")}
    proc = subprocess.Popen(
        [sys.executable, *args], stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env
    )
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError(f"no end of output after {timeout} s:\n{out.decode()[-2000:]}")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        proc.wait(timeout=30)
    text = out.decode()
    assert proc.returncode == 0, text[-3000:]
    return text


def screen_lines(raw: str) -> list[str]:
    """The lines a terminal shows for ``raw``, each as it stands when the cursor leaves it.

    ``\\r`` moves to column 0, ``\\n`` to the next line (same column), other characters
    overwrite at the cursor; any other control character (an escape sequence) fails, as this
    replay would not model it."""
    lines: list[str] = []
    line: list[str] = []
    col = 0
    for ch in raw:
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("".join(line).rstrip())
            line = [" "] * col
        elif ord(ch) < 32 and ch != "\t":
            raise AssertionError(f"control character {ch!r} in the output")
        else:
            if col < len(line):
                line[col] = ch
            else:
                line.extend(" " * (col - len(line)) + ch)
            col += 1
    return [*lines, "".join(line).rstrip()]


@pytest.fixture(scope="module", params=["sink", "eager"])
def terminal(request, tmp_path_factory):
    script = tmp_path_factory.mktemp("progress") / "train.py"
    script.write_text(SCRIPT)
    raw = run_in_terminal([str(script), request.param])
    return request.param, raw, screen_lines(raw)


def test_callback_lines_start_at_column_0_intact(terminal):
    _, raw, lines = terminal
    assert "step/s" in raw  # a bar was drawn on that terminal
    losses = [LOSS_LINE.fullmatch(line) for line in lines if "loss is" in line]
    assert all(losses), [
        line for line in lines if "loss is" in line and not LOSS_LINE.fullmatch(line)
    ]
    assert [(int(m[1]), int(m[2])) for m in losses] == [
        (e, s) for e in (1, 2) for s in range(1, STEPS + 1)
    ]
    times = [line for line in lines if "epoch time" in line]
    assert len(times) == 2 and all(TIME_LINE.fullmatch(line) for line in times), times
    # warnings and logging went through the bar too, and were put back after
    assert any(re.fullmatch(r".+:\d+: UserWarning: a warning during training", x) for x in lines)
    assert "a log record during training" in lines
    assert "restored: True" in lines
    # an error closes the bar (Model's own here) before anything else is written
    assert "after the error" in lines
    # nothing but whole lines, and no bar, is left on the screen
    assert all("step/s" not in line for line in lines), [x for x in lines if "step/s" in x]


@pytest.mark.parametrize("terminal", ["sink"], indirect=True)
def test_the_bar_moves_during_a_sink_and_shows_the_last_loss_read(terminal):
    _, raw, _ = terminal
    first_loss = raw.index("epoch: 1 step: 1, loss is")  # printed when the first sink ends
    during = raw[:first_loss].split("\r")
    counts = [int(m[1]) for draw in during if (m := COUNT.search(draw))]
    # every step is counted as it is dispatched, before the sink's one read of its losses
    assert counts == list(range(STEPS + 1)), counts
    assert any("7/40" in draw and "step/s" in draw for draw in during)
    assert not any("loss=" in draw for draw in during)  # no loss is known yet
    # the second sink shows the last loss read at the first's end (its last step's)
    last = LOSS_LINE.search(raw[raw.index(f"epoch: 1 step: {STEPS}, loss is") :])
    second = raw[raw.index("epoch 2/2") : raw.index("epoch: 2 step: 1, loss is")].split("\r")
    second = [draw for draw in second if COUNT.search(draw)]
    assert second and all(f"loss={float(last[3]):.4f}" in draw for draw in second)


# ------------------------------------------------------------------ in process


class HostReads(TorchFunctionMode):
    """Counts the tensor reads into host values made while ``watching`` is set."""

    READS = frozenset(
        {"item", "cpu", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__", "to"}
    )

    def __init__(self) -> None:
        super().__init__()
        self.watching, self.reads = None, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.watching and getattr(func, "__name__", "") in self.READS:
            self.reads.append(self.watching)
        return func(*args, **(kwargs or {}))


class WatchedBar(ProgressBar):
    """A ProgressBar whose hooks are watched by a HostReads."""

    def __init__(self, reads: HostReads, **kwargs) -> None:
        super().__init__(file=io.StringIO(), miniters=1, mininterval=0, **kwargs)
        self.host_reads = reads

    def __getattribute__(self, name):
        attr = object.__getattribute__(self, name)
        if not name.startswith("on_train"):
            return attr
        reads = object.__getattribute__(self, "host_reads")

        def watched(run_context):
            reads.watching = name
            try:
                attr(run_context)
            finally:
                reads.watching = None

        return watched


@pytest.mark.parametrize(
    ("sink", "refresh", "expected"),
    [(True, 1, 3), (False, 2, 7)],  # a read per sink; eagerly at steps 2, 4, ..., 14
)
def test_the_bar_reads_no_loss_while_steps_are_dispatched(sink, refresh, expected):
    reads = HostReads()
    bar = WatchedBar(reads, refresh=refresh)
    with reads:
        model().train(3, data()[0], callbacks=[bar], dataset_sink_mode=sink)
    assert "on_train_step_dispatched" not in reads.reads
    assert reads.reads == ["on_train_step_end"] * expected  # 3 epochs of 5 steps
    # a draw per step dispatched (a loss shown redraws the same count)
    draws = bar.file.getvalue().split("\r")
    counts = [int(m[1]) for d in draws if (m := re.search(r"(\d+)/5 \[", d))]
    assert [c for i, c in enumerate(counts) if i == 0 or c != counts[i - 1]] == [*range(6)] * 3


@pytest.fixture
def graph_mode_fake_compile(monkeypatch):
    """GRAPH_MODE with torch.compile replaced by a function whose first call takes 100 s of
    tqdm's (fake) clock: a compilation, as the bar sees it."""
    clock = [1000.0]

    def fake_time() -> float:
        clock[0] += 0.01
        return clock[0]

    def fake_compile(fn, **_):
        def compiled(*inputs):
            if not compiled.done:
                clock[0] += 100.0
                compiled.done = True
            return fn(*inputs)

        compiled.done = False
        return compiled

    import tqdm.std

    monkeypatch.setattr(tqdm.std, "time", fake_time)
    monkeypatch.setattr(torch, "compile", fake_compile)
    jisu.set_context(mode=jisu.GRAPH_MODE, graph_compile="always")
    yield
    jisu.set_context(mode=jisu.PYNATIVE_MODE)


@pytest.mark.parametrize("sink", [True, False])
def test_the_bar_says_when_the_step_compiles_and_leaves_it_out_of_the_rate(
    graph_mode_fake_compile, sink
):
    bar = ProgressBar(file=io.StringIO(), miniters=1, mininterval=0)
    model().train(2, data()[0], callbacks=[bar], dataset_sink_mode=sink)
    draws = [d for d in bar.file.getvalue().split("\r") if d.strip()]
    compiling = [i for i, d in enumerate(draws) if "compiling the train step…" in d]
    assert len(compiling) == 1  # the first step of the run only
    assert "0/5" in draws[compiling[0]] and draws[compiling[0]].startswith("epoch 1/2")
    assert "1/5" in draws[compiling[0] + 1] and "compiling" not in draws[compiling[0] + 1]
    # 100 s of compilation, then steps of a few fake 10 ms ticks: the rate is the steps'
    first_epoch_end = next(d for d in draws if "5/5" in d)
    rate = re.search(r"([\d.]+)step/s", first_epoch_end)  # (slower shows as s/step)
    assert rate and float(rate[1]) > 1.0, first_epoch_end


def test_report_writes_through_an_open_bar_and_plainly_otherwise(capsys):
    from tqdm import tqdm

    callback_module.report("no", "bar", sep="-")
    bar = tqdm(total=3, file=sys.stdout, leave=False)  # a bar on the stream the line goes to
    bar.update(1)
    callback_module.report("a line")  # not after the bar's text: on a line of its own
    bar.close()
    buffer = io.StringIO()
    callback_module.report("to a file", file=buffer)
    assert screen_lines(capsys.readouterr().out) == ["no-bar", "a line", ""]
    assert buffer.getvalue() == "to a file\n"


def test_no_bar_off_a_terminal_and_the_old_import_works(capsys):
    from jisu.train.callbacks.progress_bar import ProgressBar as Old

    assert Old is ProgressBar
    model().train(1, data()[0], callbacks=[LossMonitor(5)])
    captured = capsys.readouterr()
    assert captured.out == f"epoch: 1 step: 5, loss is {captured.out.split()[-1]}\n"
    assert "step/s" not in captured.err


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_refresh_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match=r"ProgressBar: refresh must be an int >= 1"):
        ProgressBar(refresh=bad)


@pytest.mark.slow
def test_graph_mode_shows_the_compile_notice_in_a_terminal(tmp_path):
    script = tmp_path / "graph.py"
    script.write_text(
        'import jisu\njisu.set_context(mode=jisu.GRAPH_MODE, graph_compile="always")\n'
        + SCRIPT.split("def noisy")[0]  # the data and the model
        + "bar = ProgressBar(miniters=1, mininterval=0)\n"
        + "model.train(1, data, callbacks=[bar], dataset_sink_mode=True)\n"
        + "print('compiled:', model.train_network.is_compiled)\n"
    )
    raw = run_in_terminal([str(script), "sink"], timeout=110)
    notice = raw.index("compiling the train step…")
    assert notice < raw.index(f"| 1/{STEPS} [")  # said before the first step is counted
    assert any(line.startswith("compiled: ") for line in screen_lines(raw))
