"""``jisu train``'s parts: the speed comparison, the interleaving, the curves' PNG."""

from __future__ import annotations

import statistics
import sys

import numpy as np
import pytest

from jisu import job, job_data
from jisu.train import RunContext

# ---------------------------------------------------------------- the headline


@pytest.mark.parametrize(
    "jisu, plain, expected",
    [
        # every pair faster: the median and the range
        (
            [190, 160, 220, 200, 180],
            [100, 100, 100, 100, 100],
            "jisu is 1.90x plain PyTorch (median of 5 interleaved runs; range 1.60-2.20x)",
        ),
        # the three one-off ratios of the issue (1.75x, 7.87x, 1.29x): all above 1
        (
            [175, 787, 129],
            [100, 100, 100],
            "jisu is 1.75x plain PyTorch (median of 3 interleaved runs; range 1.29-7.87x)",
        ),
        # a range straddling 1: nothing stronger than "no clear difference"
        (
            [95, 120, 105, 89],
            [100, 100, 100, 100],
            "no clear difference from plain PyTorch: 1.00x (median of 4 interleaved runs; "
            "range 0.89-1.20x)",
        ),
        # every pair slower
        (
            [80, 90, 85],
            [100, 100, 100],
            "jisu is slower: 0.85x plain PyTorch (median of 3 interleaved runs; range 0.80-0.90x)",
        ),
        # exactly 1 at an end of the range is not "faster"
        (
            [100, 150, 160],
            [100, 100, 100],
            "no clear difference from plain PyTorch: 1.50x (median of 3 interleaved runs; "
            "range 1.00-1.60x)",
        ),
        (
            [2400, 3600],
            [200, 200],
            "jisu is 15x plain PyTorch (median of 2 interleaved runs; range 12-18x)",
        ),
    ],
)
def test_headline_says_no_more_than_the_spread(jisu, plain, expected):
    comparison = job.compare_speeds(jisu, plain)
    ratios = [j / p for j, p in zip(jisu, plain)]
    assert comparison.ratios == pytest.approx(ratios)
    assert comparison.median == pytest.approx(statistics.median(ratios))
    assert (comparison.low, comparison.high) == (pytest.approx(min(ratios)), max(ratios))
    assert comparison.headline() == expected


def test_headline_pairs_runs_not_medians():
    """Each jisu run is divided by the plain run next to it: a machine that slows both
    alike (here 4x in the middle pair) does not widen the range."""
    comparison = job.compare_speeds([200, 50, 200], [100, 25, 100])
    assert comparison.headline() == (
        "jisu is 2.00x plain PyTorch (median of 3 interleaved runs; range 2.00-2.00x)"
    )


def test_a_single_pair_is_called_one():
    text = job.compare_speeds([300], [100]).headline()
    assert text.startswith("jisu ran at 3.00x plain PyTorch's speed in a single pair of runs")
    assert "no spread" in text


@pytest.mark.parametrize(
    "jisu, plain, match",
    [([], [], "at least one"), ([1, 2], [1], "Received: 2 and 1"), ([1], [0], "positive")],
)
def test_compare_speeds_refuses_what_it_cannot_pair(jisu, plain, match):
    with pytest.raises(ValueError, match=match):
        job.compare_speeds(jisu, plain)


@pytest.mark.parametrize(
    "epochs, runs, expected",
    [
        (10, 5, [2, 4, 6, 8, 10]),
        (10, 3, [2, 6, 10]),
        (10, 9, [2, 3, 4, 5, 6, 7, 8, 9, 10]),
        (10, 20, [2, 3, 4, 5, 6, 7, 8, 9, 10]),
        (3, 5, [2, 3]),
        (2, 5, [2]),
        (1, 5, []),
        (6, 1, [6]),
    ],
)
def test_plain_runs_follow_epochs_after_the_first(epochs, runs, expected):
    assert job.comparison_epochs(epochs, runs) == expected


# ---------------------------------------------------------------- the interleaving


class FakePlain:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int | None]] = []  # (after epoch, max_steps)
        self.epoch = 0

    def run(self, max_steps: int | None = None) -> float:
        self.calls.append((self.epoch, max_steps))
        return 100.0 + self.epoch

    def choose_precision(self) -> None:
        self.calls.append((self.epoch, "choose precision"))


class FakeThroughput:
    def __init__(self) -> None:
        self.epochs: list[dict] = []


class Params(dict):
    __getattr__ = dict.__getitem__


def test_plain_runs_interleave_with_jisu_epochs():
    plain, throughput = FakePlain(), FakeThroughput()
    baseline = job.InterleavedBaseline(plain, [2, 4, 6], throughput)
    for epoch in range(1, 7):
        plain.epoch = epoch
        throughput.epochs.append({"samples_per_second": 1000.0 + epoch})
        baseline.on_train_epoch_end(RunContext(Params(cur_epoch_num=epoch)))
    # a short warm-up and the choice of precision after the first (compiling) epoch, then
    # one plain epoch after 2, 4, 6
    assert plain.calls == [(1, 5), (1, "choose precision"), (2, None), (4, None), (6, None)]
    assert baseline.jisu == [1002.0, 1004.0, 1006.0]  # the epoch each plain run followed
    assert baseline.plain_rates == [102.0, 104.0, 106.0]
    assert baseline.plain_epochs == [2, 4, 6]


# ---------------------------------------------------------------- the curves


def test_plot_curves_without_matplotlib_draws_nothing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it now fails
    values = {"loss": [2.0], "accuracy": [0.4], "samples_per_second": [800.0]}
    assert job.plot_curves(values, str(tmp_path / "c.png")) is None
    assert not (tmp_path / "c.png").exists()


def test_plot_curves_writes_a_png_of_the_values(tmp_path):
    from matplotlib.image import imread

    values = {
        "loss": [2.0, 1.0, 0.5, 0.3],
        "accuracy": [0.4, 0.8, None, 0.95],
        "samples_per_second": [800.0, 2400.0, 2500.0, 2300.0],
    }
    path = job.plot_curves(values, str(tmp_path / "c.png"), [(2, 1100.0), (4, 1200.0)])
    assert path == str(tmp_path / "c.png")
    image = imread(path)  # matplotlib's own PNG reader: a valid PNG
    assert image.shape[:2] == (360, 1200) and image.dtype == np.float32
    blue = (image[..., 2] > 0.6) & (image[..., 0] < 0.3)  # the jisu curves (tab:blue)
    orange = (image[..., 0] > 0.9) & (image[..., 2] < 0.2)  # the plain runs (tab:orange)
    assert blue[:, :400].any() and blue[:, 400:800].any() and blue[:, 800:].any()
    assert orange[:, 800:].any() and not orange[:, :800].any()


# ---------------------------------------------------------------- the embedded digits


def test_the_embedded_digits_are_the_uci_test_set():
    images, labels = job_data.load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert images.min() == 0 and images.max() == 16  # counts of 16 pixels per 4x4 block
    # the class sizes the data set's description gives (UCI, optdigits.tes)
    counts = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    assert np.bincount(labels).tolist() == counts and labels.dtype == np.int64


@pytest.mark.parametrize(
    "arrays, match",
    [
        ({"images": np.zeros((1797, 8, 8), np.uint8)}, "expected arrays images and labels"),
        ({"images": np.zeros((10, 8, 8), np.uint8), "labels": np.zeros(10, np.uint8)},
         "are not the digits"),
        ({"images": np.full((1797, 8, 8), 17, np.uint8), "labels": np.zeros(1797, np.uint8)},
         "are not the digits"),
        ({"images": np.zeros((1797, 8, 8), np.uint8), "labels": np.full(1797, 10, np.uint8)},
         "are not the digits' labels"),
        ({"images": np.array([object()] * 3), "labels": np.zeros(3)}, "pickle"),
    ],
)  # fmt: skip
def test_a_damaged_digits_file_is_refused(tmp_path, monkeypatch, arrays, match):
    path = tmp_path / "digits.npz"
    np.savez(path, **arrays)
    monkeypatch.setattr(job_data, "DIGITS_FILE", str(path))
    with pytest.raises(ValueError, match=match):
        job_data.load_digits()


def test_the_plain_loop_keeps_the_faster_of_its_precisions():
    """The baseline tries fp32 and bf16 autocast, taking turns, and keeps the faster (rates
    injected: the choice, not this machine, is checked)."""
    for rates, expected in [
        ({"fp32": 100.0, "bf16 autocast": 130.0}, "bf16 autocast"),
        ({"fp32": 100.0, "bf16 autocast": 90.0}, "fp32"),
    ]:
        loop = job.PlainLoop.__new__(job.PlainLoop)  # no data: only the choice runs
        order = []

        def run(max_steps=None, loop=loop, order=order, rates=rates):
            order.append(loop.precision)
            return rates[loop.precision]

        loop.run = run
        loop.choose_precision(steps=3, rounds=2)
        assert loop.precision == expected
        assert order == ["fp32", "bf16 autocast", "bf16 autocast", "fp32"]


@pytest.mark.parametrize(
    ("device", "cpus", "expected"),
    [("CPU", 1, 1), ("CPU", 2, 1), ("CPU", 16, 4), ("GPU", 2, 2), ("GPU", 16, 16)],
)
def test_the_pipeline_leaves_a_cpu_steps_cores_to_it(device, cpus, expected):
    assert job.pipeline_workers(device, cpus) == expected


@pytest.mark.parametrize("workers", [1, 2])
def test_the_main_pipeline_runs_the_workers_it_is_given(tmp_path, workers):
    """Every op carries the count, so no op widens the stage beyond it (a stage runs as many
    threads as its widest op; a narrower op alone would make the threads take turns)."""
    train, _ = job_data.write_digits_records(str(tmp_path))
    plan = job_data.pipeline(train, True, 64, workers, False).explain()
    assert f"(fetch): {workers} thread{'s' if workers > 1 else ''}\n" in plan
    assert "at most" not in plan
