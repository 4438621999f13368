"""Every guide opens with a complete example that runs as pasted (issue 52): a newcomer
copies the first code block of a guide into a file, runs it on a CPU-only machine, and it
works in seconds and prints what its comments say.

A guide's *first example* is its first fenced code block: the first line that opens a fence
(three backticks at the start of the line, after indentation if any) up to the line that
closes it at the same indentation. It must be tagged ``python``, so a guide that opens with
a shell command or a fragment fails here, and a new guide without an example fails too. A
page made only of ``{include}`` directives (``benchmarks.md`` includes
``docs/benchmarks.md``) has no text of its own and is not a guide in this sense.

Each example runs in a fresh interpreter (``sys.executable -c``) in an empty folder, with its
temporary files under that folder and torch and jisu kept to one thread and two CPUs. All
nine took 22 s together on this project's 2-core machine, with other work beside them (2-3 s
each, about 1.5 s of it ``import jisu`` and torch); the timeouts only guard against a hang.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Callable

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDES = os.path.join(ROOT, "docs", "site", "guides")
RUN_TIMEOUT_S = 300  # a hang guard: an example takes 2-3 s on a 2-core machine

#: a fenced block: the opening fence (its indentation, its language tag), then everything up
#: to a line holding only the closing fence at the same indentation
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<tag>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def blocks(text: str) -> list[tuple[str, str]]:
    """The fenced code blocks of a Markdown text, in order, as (tag, code)."""
    out = []
    for match in FENCE.finditer(text):
        indent = match["indent"]
        lines = match["body"].splitlines(keepends=True)
        code = "".join(line[len(indent) :] if line.startswith(indent) else line for line in lines)
        out.append((match["tag"].strip(), code))
    return out


def first_example(text: str) -> tuple[str, str] | None:
    """The guide's first fenced code block as (tag, code), or None when it has none."""
    found = blocks(text)
    return found[0] if found else None


def as_text(output: str | bytes | None) -> str:
    """What a timed-out subprocess had written (bytes there, whatever ``text=True`` said)."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def read_guide(name: str) -> str:
    with open(os.path.join(GUIDES, name), encoding="utf-8") as f:
        return f.read()


def is_include_only(text: str) -> bool:
    """A page that only includes another file: nothing but ``{include}`` blocks."""
    found = blocks(text)
    rest = FENCE.sub("", text).strip()
    return bool(found) and not rest and all(tag.startswith("{include}") for tag, _ in found)


GUIDE_NAMES = sorted(
    name
    for name in os.listdir(GUIDES)
    if name.endswith(".md") and not is_include_only(read_guide(name))
)


# ------------------------------------------------------------ what each example prints


def floats_after(label: str, out: str) -> list[float]:
    return [float(x) for x in re.findall(rf"{label}\s*([-+0-9.e]+)", out)]


def falls(values: list[float], expected: int) -> None:
    assert len(values) == expected, values
    assert values[-1] < values[0], f"the loss should fall: {values}"


def dict_printed(out: str, key: str) -> dict:
    line = next(line for line in out.splitlines() if line.startswith("{") and key in line)
    return ast.literal_eval(line)


def amp(out: str) -> None:
    assert re.search(r"Conv2d\s+bf16", out) and re.search(r"BatchNorm2d\s+fp32", out), out
    falls(floats_after("loss", out), 3)


def device_decode(out: str) -> None:
    assert out.count("shipped torch.uint8 (8, ") == 2, out
    assert out.count("decoded torch.float32 (8, 3, 64, 64)") == 2, out


def doctor(out: str) -> None:
    first, suggestion = out.splitlines()[:2]
    assert first.endswith("map#2: augment"), out
    assert "python_multiprocessing=True" in suggestion, out


def guarantees(out: str) -> None:
    damaged, refused, untouched = out.splitlines()
    assert damaged.startswith("MalformedFileError") and "net.ckpt" in damaged, out
    assert "nothing was loaded" in refused, out
    assert untouched == "True", out


def pipeline(out: str) -> None:
    falls(floats_after("loss", out), 3)


def porting(out: str) -> None:
    falls(floats_after("loss is", out), 3)
    assert dict_printed(out, "Accuracy")["Accuracy"] >= 0.8, out


def records(out: str) -> None:
    assert "train.rec0" in out and "train.rec.manifest.json" in out, out
    assert out.count("torch.Size([25, 3, 16, 16])") == 4, out


def scale_out(out: str) -> None:
    ranks = re.findall(r"rank (\d): 100 rows \[([^\]]*)\]\.\.\., same in processes: True", out)
    assert [rank for rank, _ in ranks] == ["0", "1"], out
    assert ranks[0][1].split() == ["88", "47", "17", "191"], out  # the comment's rows


def training(out: str) -> None:
    falls(floats_after("loss is", out), 4)
    assert dict_printed(out, "acc")["acc"] >= 0.75, out
    assert out.rstrip().endswith("run-4_16.ckpt"), out


#: guide -> a check of what its example prints (what its comments say); a new guide needs
#: none to be tested, only a first example that runs
CHECKS: dict[str, Callable[[str], None]] = {
    "amp.md": amp,
    "device-decode.md": device_decode,
    "doctor.md": doctor,
    "guarantees.md": guarantees,
    "pipeline.md": pipeline,
    "porting.md": porting,
    "records.md": records,
    "scale-out.md": scale_out,
    "training.md": training,
}


def test_the_first_example_is_found_as_defined():
    text = "# T\n\nText.\n\n  ```python\n  x = 1\n  if x:\n      y = 2\n  ```\n\n```bash\nls\n```\n"
    assert first_example(text) == ("python", "x = 1\nif x:\n    y = 2\n")
    assert first_example("# T\n\n```bash\nls\n```\n```python\nx = 1\n```\n")[0] == "bash"
    assert first_example("# T\n\nno code\n") is None
    assert is_include_only("```{include} ../../benchmarks.md\n```\n")
    assert "benchmarks.md" not in GUIDE_NAMES


def test_every_guide_has_a_check_and_every_check_a_guide():
    assert GUIDE_NAMES, f"no guides found in {GUIDES}"
    assert set(CHECKS) <= set(GUIDE_NAMES), f"checks of no guide: {set(CHECKS) - set(GUIDE_NAMES)}"


@pytest.mark.timeout(RUN_TIMEOUT_S)
@pytest.mark.parametrize("guide", GUIDE_NAMES)
def test_the_guides_first_example_runs_as_pasted(guide, tmp_path):
    example = first_example(read_guide(guide))
    assert example is not None, f"docs/site/guides/{guide} has no example: open it with one"
    tag, code = example
    assert tag == "python", (
        f"docs/site/guides/{guide} opens with a ```{tag} block: open it with a complete Python "
        "example that runs as pasted"
    )
    env = dict(os.environ)
    env.update(
        JISU_CPUS="2",  # the library's workers, whatever the machine
        OMP_NUM_THREADS="1",  # torch's intra-op threads: tiny steps run fastest on one
        MKL_NUM_THREADS="1",
        TMPDIR=str(tmp_path),  # the example's temporary folders, removed with tmp_path
        PYTHONPATH=os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")])),
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S - 10,
        )
    except subprocess.TimeoutExpired as exc:
        output = [as_text(exc.stdout), as_text(exc.stderr)]
        pytest.fail(f"docs/site/guides/{guide}'s first example hung:\n" + "\n".join(output))
    assert done.returncode == 0, (
        f"docs/site/guides/{guide}'s first example failed ({done.returncode}):\n"
        f"{done.stdout}\n{done.stderr}"
    )
    check = CHECKS.get(guide)
    if check is not None:
        check(done.stdout)
