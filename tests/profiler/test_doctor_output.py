"""What ``jisu doctor`` reads and how it says it: a user file's sibling modules import, the
measuring window has a minimum duration (on a fake clock), sizes carry the right unit, and
a stage whose items are batches is measured in batches."""

from __future__ import annotations

import re
import sys
import textwrap

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.cli import main
from jisu.profiler.doctor import (
    diagnose_pipeline,
    format_bytes,
    load_callable,
    pipeline_text,
    stage_unit,
)
from jisu.profiler.report import render

# ---------------------------------------------------------------- a user file's siblings


@pytest.fixture
def user_project(tmp_path, monkeypatch):
    """A folder with my.py importing helper.py next to it (and helper_late.py, imported only
    when the function runs), and another helper.py in a folder already on sys.path."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "helper.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            import jisu.dataset as ds

            WHERE = "project"

            def rows():
                return ds.NumpySlicesDataset(np.arange(32, dtype=np.float32), shuffle=False)
            """
        )
    )
    (project / "helper_late.py").write_text("BATCH = 4\n")
    (project / "my.py").write_text(
        textwrap.dedent(
            """
            import helper

            def pipeline():
                import helper_late  # imported when the function runs, after loading

                return helper.rows().batch(helper_late.BATCH)

            def where():
                return helper.WHERE
            """
        )
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "helper.py").write_text("WHERE = 'elsewhere'\n")
    monkeypatch.syspath_prepend(str(elsewhere))  # restores sys.path afterwards
    names = ("helper", "helper_late", "jisu_doctor_my")
    for name in names:
        sys.modules.pop(name, None)
    yield project
    for name in names:
        sys.modules.pop(name, None)


def test_a_user_file_imports_the_modules_next_to_it(user_project):
    where = load_callable(f"{user_project / 'my.py'}:where")
    assert where() == "project"  # its own helper.py, not the one found first before
    assert sys.path[0] == str(user_project)
    pipeline = load_callable(f"{user_project / 'my.py'}:pipeline")
    assert pipeline().get_batch_size() == 4  # the import inside the function works too


def test_doctor_runs_a_pipeline_file_that_imports_its_sibling(user_project, tmp_path, capsys):
    spec = f"{user_project / 'my.py'}:pipeline"
    args = ["doctor", "--pipeline", spec, "--batches", "3", "--min-seconds", "0"]
    assert main([*args, "--report", str(tmp_path / "report.html")]) == 0
    assert "pipeline: 3 batches" in capsys.readouterr().out


# ---------------------------------------------------------------- the measuring window


class Ticks:
    """A fake clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        value = self.now
        self.now += self.step
        return value


def batches_of(rows: int, size: int) -> ds.Dataset:
    return ds.NumpySlicesDataset(np.arange(rows, dtype=np.float32), shuffle=False).batch(size)


# the clock is read at the start and after each item: item i arrives at i * 0.125 s. The
# reading stops at the first item i with (i >= batches and i * 0.125 >= min_seconds), or
# with i * 0.125 >= seconds.
WINDOWS = {
    "the count alone (no minimum time)": (dict(batches=5, min_seconds=0.0), 5),
    "the minimum time decides": (dict(batches=5, min_seconds=2.0), 16),  # 2.0 / 0.125
    "the count decides after the minimum time": (dict(batches=20, min_seconds=1.0), 20),
    "the time limit bounds it": (dict(batches=100, min_seconds=2.0, seconds=1.0), 8),
}


@pytest.mark.parametrize("window, items", WINDOWS.values(), ids=WINDOWS.keys())
def test_the_pipeline_is_read_for_a_minimum_time(window, items):
    """8 batches per epoch: the reading goes on into the next epochs when needed."""
    report = diagnose_pipeline(batches_of(64, 8), clock=Ticks(0.125), **window)
    assert report["items"] == items
    assert report["items_per_s"] == pytest.approx(items / (items * 0.125))  # 8 per second
    assert report["item_unit"] == "batch"


def test_the_default_window_is_at_least_two_seconds():
    report = diagnose_pipeline(batches_of(64, 8), batches=5, clock=Ticks(0.125))
    assert report["items"] == 16  # 2 s of items arriving every 0.125 s, not 5 items


def test_an_empty_pipeline_ends_the_window():
    empty = ds.NumpySlicesDataset(np.arange(8, dtype=np.float32)).filter(lambda x: False)
    report = diagnose_pipeline(empty.batch(4), batches=5, min_seconds=2.0, clock=Ticks(0.125))
    assert report["items"] == 0


def test_an_unbatched_pipeline_counts_rows():
    rows = ds.NumpySlicesDataset(np.arange(64, dtype=np.float32), shuffle=False)
    report = diagnose_pipeline(rows, batches=6, min_seconds=0.0, clock=Ticks(0.125))
    assert report["item_unit"] == "row"
    assert pipeline_text(report).startswith("pipeline: 6 rows, 8.0 rows/s")


def test_the_help_says_how_long_the_pipeline_is_read(capsys):
    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--min-seconds" in text and "at least --batches batches" in text
    assert "never read longer than this" in text


# ---------------------------------------------------------------- units


def stage(name: str, per_s: float, ms: float, size: float, **extra) -> dict:
    return {
        "stage": name, "workers": 2, "rows": 100, "rows_per_s": per_s, "ms_per_row": ms,
        "busy_share": 0.5, "queue_empty_share": 0.25, "queue_full_share": 0.125,
        "consumer_wait_s": 0.0, "bytes_per_row": size, "seconds": 1.0, **extra,
    }  # fmt: skip


# a source of rows of 48 bytes, a map of rows of 1.5 MiB, a batch stage of 5 KiB batches
SOURCE, MAP, BATCH = 48.0, 1.5 * 1024 * 1024, 5 * 1024.0
PIPELINE = {
    "stages": [
        stage("GeneratorDataset#1", 400.0, 0.5, SOURCE),
        stage("map#3", 300.0, 2.25, MAP),
        stage("batch#4", 50.0, 20.0, BATCH),
    ],
    "items": 10, "items_per_s": 50.0, "item_unit": "batch",
    "output": {"consumer_wait_share": 0.5, "queue_empty_share": 0.5, "occupancy": [(0.1, 1)]},
    "bottleneck": "batch#4", "suggestion": "raise num_parallel_workers",
}  # fmt: skip


@pytest.mark.parametrize(
    "count, shown",
    [
        (0, "0 B"),
        (48, "48 B"),
        (1023, "1023 B"),
        (1024, f"{1024 / 1024:.1f} KiB"),
        (5 * 1024, f"{5 * 1024 / 1024:.1f} KiB"),
        (1536, "1.5 KiB"),
        (1.5 * 1024 * 1024, "1.5 MiB"),
        (3 * 1024**3, "3.0 GiB"),
    ],
)
def test_sizes_are_shown_in_a_unit_that_fits(count, shown):
    assert format_bytes(count) == shown


def test_the_report_shows_each_stage_size_in_its_unit():
    page = render(PIPELINE)
    cells = {
        row[0]: row
        for row in (re.findall(r"<td>(.*?)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", page))
        if row
    }
    assert cells["batch#4"][7] == f"{BATCH / 1024:.1f} KiB/batch"  # 5.0 KiB, not 5,120
    assert cells["map#3"][7] == f"{MAP / 1024 / 1024:.1f} MiB/row"
    assert cells["GeneratorDataset#1"][7] == f"{SOURCE:.0f} B/row"
    assert "KiB/row" not in page  # no column title in one unit over values in another


def test_a_batch_stage_is_measured_in_batches():
    lines = {line.split()[1]: line for line in pipeline_text(PIPELINE).splitlines()[1:4]}
    batch, mapped, source = lines["batch#4"], lines["map#3"], lines["GeneratorDataset#1"]
    assert "50.0 batches/s" in batch and "20.00 ms/batch" in batch and "5.0 KiB/batch" in batch
    assert "row" not in batch
    assert "300.0 rows/s" in mapped and "2.25 ms/row" in mapped and "1.5 MiB/row" in mapped
    assert "400.0 rows/s" in source and "48 B/row" in source
    page = render(PIPELINE)
    assert "<td>50.0 batches/s</td><td>20.00 ms/batch</td>" in page
    assert "<td>300.0 rows/s</td><td>2.25 ms/row</td>" in page


@pytest.mark.parametrize(
    "summary, unit",
    [
        ({"stage": "batch#4"}, "batch"),
        ({"stage": "map#3"}, "row"),
        ({"stage": "GeneratorDataset#1"}, "row"),
        ({"stage": "map#3", "unit": "batch"}, "batch"),  # a stage that says so wins
        ({"stage": "batch#4", "unit": "row"}, "row"),
        ({"stage": "map#3", "unit": "batches"}, "batch"),
    ],
)
def test_the_unit_comes_from_the_summary_or_the_stage_name(summary, unit):
    assert stage_unit(summary) == unit
