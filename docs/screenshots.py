"""Take the training guide's screenshots of a training run: the terminal and TensorBoard.

    pip install pyte "jisu[tensorboard]"     # pyte: a terminal emulator, for this script only
    python docs/screenshots.py               # needs Chromium (headless)

Runs ``examples/watch_training.py`` in a pseudo-terminal of 100x24, replays what it wrote
through a terminal emulator (pyte) and keeps the screen as it stood in the middle of the last
epoch (the bar moving, the previous epochs' lines above it); renders that screen to HTML and
photographs it with headless Chromium (``docs/training-terminal.png``). Then starts
TensorBoard on the run's event files and photographs its scalars page, the
loss, accuracy, learning rate, throughput and data-wait charts
(``docs/tensorboard.png``).
"""

from __future__ import annotations

import html
import os
import pty
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COLS, ROWS = 100, 24
PARTIAL_BAR = re.compile(r"epoch (\d+)/(\d+):.*\| *(\d+)/(\d+) ")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("docs/screenshots.py: needs Chromium (chromium, chromium-browser or google-chrome)")


def run_in_terminal(command: list[str]) -> list[bytes]:
    """The chunks ``command`` wrote to a COLS x ROWS pseudo-terminal, in order."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal of our size, then the command
        os.environ.update(COLUMNS=str(COLS), LINES=str(ROWS), TERM="xterm-256color")
        os.execvp(command[0], command)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    return chunks


def mid_epoch_screen(chunks: list[bytes]) -> list[str]:
    """The screen's lines at the last moment the bar of the final epoch stood between 25 % and
    75 %: what a user watching the run sees most of the time."""
    import pyte

    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    kept = None
    for chunk in chunks:
        stream.feed(chunk)
        for line in screen.display:
            match = PARTIAL_BAR.search(line)
            if match and match[1] == match[2] and 0.25 <= int(match[3]) / int(match[4]) <= 0.75:
                kept = list(screen.display)
    if kept is None:
        raise RuntimeError("the run never showed its last epoch's bar half-way")
    return kept


def terminal_html(lines: list[str], title: str) -> str:
    body = html.escape("\n".join(line.rstrip() for line in lines).rstrip("\n"))
    return f"""<!doctype html><meta charset="utf-8"><title>{title}</title>
<style>
body {{ margin: 0; background: #1e1e1e; }}
.bar {{ background: #323233; color: #ccc; font: 13px sans-serif; padding: 6px 12px; }}
pre {{ margin: 0; padding: 10px 12px; color: #d4d4d4; font: 14px/1.35 "DejaVu Sans Mono",
      monospace; white-space: pre; }}
</style>
<div class="bar">{html.escape(title)}</div><pre>{body}</pre>"""


def photograph(url: str, path: str, width: int, height: int, wait_ms: int = 2000) -> None:
    subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--virtual-time-budget={wait_ms}",
            f"--screenshot={path}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tensorboard_screenshot(logdir: str, path: str) -> None:
    port = free_port()
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", logdir]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(120):
            try:
                urllib.request.urlopen(url + "data/logdir", timeout=2).read()
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("TensorBoard did not start")
        tags = urllib.parse.quote("loss|acc|samples|wait|lr", safe="")
        page = f"{url}#scalars&tagFilter={tags}&_smoothingWeight=0"
        photograph(page, path, 1400, 1000, wait_ms=15000)
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    with tempfile.TemporaryDirectory() as out:
        example = os.path.join(ROOT, "examples", "watch_training.py")
        command = [sys.executable, example, "--out", out, "--epochs", "4"]
        lines = mid_epoch_screen(run_in_terminal(command))
        page = os.path.join(out, "terminal.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(terminal_html(lines, "python examples/watch_training.py"))
        terminal_png = os.path.join(HERE, "training-terminal.png")
        photograph("file://" + page, terminal_png, 930, 30 + ROWS * 19 + 20)
        tensorboard_png = os.path.join(HERE, "tensorboard.png")
        tensorboard_screenshot(os.path.join(out, "summary"), tensorboard_png)
    print(f"wrote {terminal_png} and {tensorboard_png}")


if __name__ == "__main__":
    main()
