"""CSVDataset / TextFileDataset shards and shuffle levels, against what MindSpore 2.10 gave on
the same files (tests/fixtures/sources_parity, "shards" and "shuffles", made by
make_fixtures.py with one worker; MindSpore is not needed here).

Rows are named ``f<file>r<row>``. With ``shuffle=False`` the rows of every shard must equal
MindSpore's. Seeded orders cannot match bit for bit, so the shuffle levels are checked by a
property that MindSpore's recorded epochs are shown to have, too: each epoch lays the files
end to end in some order, the same for every shard, and every shard reads its contiguous block
of that order (in file order for FILES; as a set for GLOBAL/True, whose rows are then
shuffled). INFILE is where jisu keeps its own rule (MindSpore ignores it): the rows of
``shuffle=False``, shuffled within each file's run.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.sources.file_order import block_positions
from tests.conftest import rows_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sources_parity"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
TEXT = [str(FIXTURES / "text" / f"t{k}.txt") for k in range(3)]
CSV = [str(FIXTURES / "csv" / f"c{k}.csv") for k in range(3)]
FILE_ROWS = {k: [f"f{k}r{i}" for i in range(n)] for k, n in enumerate([3, 5, 2])}
LEVELS = {
    "files": ds.Shuffle.FILES,
    "global": ds.Shuffle.GLOBAL,
    "infile": ds.Shuffle.INFILE,
    "true": True,
}


def text(**kw) -> ds.Dataset:
    return ds.TextFileDataset(TEXT, **kw)


def csv(**kw) -> ds.Dataset:
    return ds.CSVDataset(CSV, column_defaults=[0, 0], **kw)


MAKE = {"text": text, "csv": csv}


def names(data: ds.Dataset, num_epochs: int = 1) -> list[list[str]]:
    it = data.create_tuple_iterator(output_numpy=True, num_epochs=num_epochs)
    try:
        if data.get_col_names() == ["text"]:
            return [[str(r[0]) for r in it] for _ in range(num_epochs)]
        return [[f"f{int(r[0])}r{int(r[1])}" for r in it] for _ in range(num_epochs)]
    finally:
        it.close()


# ----------------------------------------------------------------- shuffle=False: exact
@pytest.mark.parametrize("kind", ["text", "csv"])
def test_shards_get_mindspores_contiguous_blocks(kind):
    cases = EXPECTED["shards"][kind]
    assert names(MAKE[kind](shuffle=False))[0] == cases["all"]
    for case, want in cases.items():
        if case == "all":
            continue
        n, _, samples = [*case.split(), None, None][:3]
        n = int(n)
        extra = {} if samples is None else {"num_samples": int(samples)}
        for k in range(n):
            data = MAKE[kind](shuffle=False, num_shards=n, shard_id=k, **extra)
            assert names(data)[0] == want[k], (case, k)
            assert data.get_dataset_size() == len(want[k])


def test_more_shards_than_rows_cycle_through_the_rows():
    one = str(FIXTURES / "text" / "one.txt")
    for n, want in EXPECTED["shards"]["text_one_file"].items():
        n = int(n)
        got = [
            names(ds.TextFileDataset(one, shuffle=False, num_shards=n, shard_id=k))[0]
            for k in range(n)
        ]
        assert got == want


def test_block_positions_formula():
    # an independent statement of the rule: shard k reads rows k*c .. k*c+c-1 (mod n)
    for n in range(1, 12):
        for shards in range(1, 15):
            c = -(-n // shards)
            for k in range(shards):
                want = [(k * c + j) % n for j in range(c)]
                assert block_positions(n, shards, k).tolist() == want


# ----------------------------------------------------------------- shuffle levels: property
def block(order: tuple[int, ...], n: int, k: int, samples: int | None) -> list[str]:
    laid = [row for f in order for row in FILE_ROWS[f]]
    c = -(-len(laid) // n)
    rows = [laid[(k * c + j) % len(laid)] for j in range(c)]
    return rows if samples is None else rows[:samples]


def file_orders(level: str, shards: list[list[str]], n: int, samples: int | None) -> list:
    """The file orders under which every shard's rows (one epoch) are its block: equal for
    FILES, equal as sets for GLOBAL/True, and for INFILE equal as sets to the in-order block."""
    fits = []
    candidates = itertools.permutations(range(3)) if level != "infile" else [(0, 1, 2)]
    for order in candidates:
        blocks = [block(order, n, k, samples) for k in range(n)]
        if level == "files":
            ok = shards == blocks
        else:
            ok = all(sorted(s) == sorted(b) for s, b in zip(shards, blocks, strict=True))
        if ok:
            fits.append(order)
    return fits


def shuffle_cases():
    for kind, cases in EXPECTED["shuffles"].items():
        for case in cases:
            yield kind, case


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("kind", "case"), list(shuffle_cases()))
def test_shuffle_levels_read_mindspores_blocks(kind, case):
    level, n, _, samples = case.split()
    n, samples = int(n), None if samples == "None" else int(samples)
    recorded = EXPECTED["shuffles"][kind][case]  # [shard][epoch] -> rows
    extra = {} if samples is None else {"num_samples": samples}
    ds.config.set_seed(5)
    mine = [
        names(MAKE[kind](shuffle=LEVELS[level], num_shards=n, shard_id=k, **extra), 3)
        for k in range(n)
    ]
    for who, epochs in (("MindSpore", recorded), ("jisu", mine)):
        for e in range(3):
            shards = [epochs[k][e] for k in range(n)]
            fits = file_orders(level, shards, n, samples)
            assert fits, f"{who}, epoch {e}: no file order gives these shards: {shards}"
    if level == "infile":  # jisu's own rule: shuffled within each file's run of the block
        for k in range(n):
            base = block((0, 1, 2), n, k, samples)
            for rows in mine[k]:
                files = [r.split("r")[0] for r in base]
                got_files = [r.split("r")[0] for r in rows]
                assert got_files == files  # every row stays in its file's run
        assert recorded[0][0] == block((0, 1, 2), n, 0, samples)  # MindSpore ignores INFILE


def test_shuffled_epochs_change_the_file_order_and_the_rows():
    ds.config.set_seed(11)
    epochs = names(text(shuffle=ds.Shuffle.FILES), 6)
    firsts = {e[0] for e in epochs}
    assert len(firsts) > 1  # the files come in other orders
    ds.config.set_seed(11)
    shuffled = names(text(shuffle=ds.Shuffle.GLOBAL), 6)
    assert any(
        e not in [block(o, 1, 0, None) for o in itertools.permutations(range(3))] for e in shuffled
    )  # not only the files: the rows too
    for e in shuffled:
        assert sorted(e) == sorted(itertools.chain.from_iterable(FILE_ROWS.values()))


def test_shards_of_one_epoch_cover_every_row():
    ds.config.set_seed(2)
    for level in LEVELS.values():
        seen = []
        for k in range(3):
            seen += names(csv(shuffle=level, num_shards=3, shard_id=k))[0]
        assert len(seen) == 12  # ceil(10 / 3) rows each
        assert set(seen) == set(itertools.chain.from_iterable(FILE_ROWS.values()))


def test_a_sampler_set_later_decides_alone():
    data = text(shuffle=False)
    data.use_sampler(ds.SubsetSampler([9, 0, 4]))
    assert rows_of(data) == ["f2r1", "f0r0", "f1r1"]


def test_the_shards_side_by_side_are_the_rows_cycled():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 30))
        shards = int(rng.integers(1, 9))
        every = np.concatenate([block_positions(n, shards, k) for k in range(shards)])
        c = -(-n // shards)
        assert np.array_equal(every, np.arange(shards * c) % n)
