"""Issue 51's names and checks against MindSpore 2.10's recorded answers
(``tests/fixtures/ds_callbacks_config/expected.json``): the config switches jisu stores,
``set_enable_autotune(filepath_prefix=)``, ``RandomSampler(shuffle=)``, and the error types of
RegexTokenizer, the flips, ``map(column_order=)`` and ``Schema.from_json``."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import text, vision

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ds_callbacks_config" / "expected.json"
WANT = json.loads(FIXTURE.read_text())


def answer(call, *args, **kwargs):
    """What ``call(*args, **kwargs)`` gives: its result, or the error it raised."""
    try:
        return call(*args, **kwargs)
    except Exception as exc:
        return exc


def set_get(setter, getter, *args, **kwargs):
    """Set, then read back."""
    setter(*args, **kwargs)
    return getter()


def matches(got, want) -> bool:
    """``got`` is MindSpore's answer: its value, or an error of its class (and a RuntimeError
    where MindSpore's is one; jisu's may derive from more classes)."""
    if isinstance(want, dict) and "error" in want:
        return isinstance(got, getattr(builtins, want["error"])) and (
            isinstance(got, RuntimeError) or not want["runtime"]
        )
    return got == want


@pytest.fixture
def restore_config():
    c = ds.config
    saved = (
        c.get_dynamic_shape(),
        c.get_iterator_mode(),
        c.get_debug_mode(),
        c.get_multiprocessing_start_method(),
        c.get_video_backend(),
    )
    yield
    c.set_dynamic_shape(saved[0])
    c.set_iterator_mode(**saved[1])
    c.set_debug_mode(saved[2])
    c.set_multiprocessing_start_method(saved[3])
    c.set_video_backend(saved[4])
    c.set_enable_autotune(False)


@pytest.mark.parametrize(
    ("name", "setter", "getter"),
    [
        ("dynamic_shape", "set_dynamic_shape", "get_dynamic_shape"),
        ("multiprocessing_start_method", "set_multiprocessing_start_method",
         "get_multiprocessing_start_method"),
        ("video_backend", "set_video_backend", "get_video_backend"),
    ],
)  # fmt: skip
def test_switches_take_and_refuse_what_mindspore_does(restore_config, name, setter, getter):
    want = WANT["config"][name]
    values = {"True": True, "False": False, "1": 1, "None": None}
    assert getattr(ds.config, getter)() == want["default"]
    for key, expected in want.items():
        if key == "default":
            continue
        value = values[key] if key in values else key.strip("'")
        got = answer(set_get, getattr(ds.config, setter), getattr(ds.config, getter), value)
        assert matches(got, expected), (key, got, expected)


def test_iterator_mode_is_mindspores(restore_config):
    want = WANT["config"]["iterator_mode"]
    assert ds.config.get_iterator_mode() == want["default"]
    for key, expected in want.items():
        if key != "default":
            kwargs = json.loads(key)
            got = answer(
                set_get, ds.config.set_iterator_mode, ds.config.get_iterator_mode, **kwargs
            )
            assert matches(got, expected), (key, got)


def test_debug_mode_is_mindspores(restore_config):
    want = WANT["config"]["debug_mode"]
    args = {"true": (True,), "false": (False,), "int": (1,), "hooks_int": (True, [1]),
            "hooks_str": (True, "x"), "hooks_none": (True, None)}  # fmt: skip
    assert ds.config.get_debug_mode() == want["default"]
    for key, call_args in args.items():
        got = answer(set_get, ds.config.set_debug_mode, ds.config.get_debug_mode, *call_args)
        assert matches(got, want[key]), (key, got)
        ds.config.set_debug_mode(False)


def test_autotune_takes_mindspores_filepath_prefix(restore_config, tmp_path, monkeypatch):
    want = WANT["config"]["autotune"]
    calls = {
        "prefix_none": lambda: ds.config.set_enable_autotune(False, filepath_prefix=None),
        "prefix_int": lambda: ds.config.set_enable_autotune(True, filepath_prefix=3),
        "prefix_empty": lambda: ds.config.set_enable_autotune(True, filepath_prefix=""),
        "prefix_dir": lambda: ds.config.set_enable_autotune(True, filepath_prefix=str(tmp_path)),
    }
    for key, call in calls.items():
        got = answer(call)
        assert matches(got, None if want[key] == "ok" else want[key]), (key, got)
    monkeypatch.setenv("RANK_ID", "3")
    ds.config.set_enable_autotune(True, filepath_prefix=str(tmp_path / "at_"))
    assert ds.config.get_autotune_filepath() == str(tmp_path / "at_3.json")  # prefix+rank+.json
    ds.config.set_enable_autotune(True, filepath=str(tmp_path / "mine.json"))  # jisu's argument
    assert ds.config.get_autotune_filepath() == str(tmp_path / "mine.json")


SHUFFLES = {
    "GLOBAL": ds.Shuffle.GLOBAL,
    "FILES": ds.Shuffle.FILES,
    "INFILE": ds.Shuffle.INFILE,
    "True": True,
    "False": False,
    "None": None,
    "'global'": "global",
}


@pytest.mark.parametrize("key", sorted(SHUFFLES))
def test_random_sampler_shuffle_is_mindspores(key):
    want = WANT["random_sampler"][key]
    try:
        sampler = ds.RandomSampler(shuffle=SHUFFLES[key])
    except Exception as exc:
        assert want != "ok" and want["when"] == "init" and matches(exc, want)
        return
    assert want == "ok" or want["when"] == "build"
    got = answer(
        lambda: sorted(
            int(r[0])
            for r in ds.NumpySlicesDataset(
                np.arange(10), ["x"], sampler=sampler
            ).create_tuple_iterator(output_numpy=True)
        )
    )
    assert got == list(range(10)) if want == "ok" else matches(got, want), got


def test_regex_tokenizer_bad_pattern_is_a_runtime_error_too():
    assert WANT["errors"]["regex_bad_pattern"]["runtime"]
    with pytest.raises(RuntimeError, match=r"RegexTokenizer: invalid pattern '\(ab'"):
        text.RegexTokenizer("(ab")
    with pytest.raises(ValueError, match="invalid pattern"):  # jisu's class, when it is made
        text.RegexTokenizer("\\s+", "(x")


FLIPS = {
    "HorizontalFlip": vision.HorizontalFlip,
    "VerticalFlip": vision.VerticalFlip,
    "RandomHorizontalFlip": lambda: vision.RandomHorizontalFlip(1.0),
    "RandomVerticalFlip": lambda: vision.RandomVerticalFlip(1.0),
}


@pytest.mark.parametrize("case", sorted(WANT["errors"]["flips"]))
def test_flips_take_and_refuse_the_dtypes_mindspore_does(case):
    name, dtype = case.split("/")
    image = np.arange(18).reshape(2, 3, 3).astype(dtype)
    want = WANT["errors"]["flips"][case]
    got = answer(lambda: FLIPS[name]()(image))
    if isinstance(want, dict):
        assert matches(got, want) and dtype in str(got), got
    else:
        mirrored = image[:, ::-1] if "Horizontal" in name else image[::-1]
        assert str(got.dtype) == want and np.array_equal(got, mirrored)


def test_map_column_order_is_refused_as_mindspore_2_does():
    want = WANT["errors"]["map_column_order"]
    source = ds.NumpySlicesDataset({"a": [1], "b": [2]}, shuffle=False)
    got = answer(lambda: source.map(lambda x: x, input_columns=["a"], column_order=["b", "a"]))
    assert matches(got, want) and "project" in str(got)


COLUMNS = {
    "shape_no_rank": {"type": "int32", "shape": [2, 3]},
    "no_shape_no_rank": {"type": "int32"},
    "rank_and_shape": {"type": "int32", "rank": 1, "shape": [3]},
    "rank_disagrees": {"type": "int32", "rank": 2, "shape": [3]},
}


@pytest.mark.parametrize("case", sorted(COLUMNS))
def test_schema_from_json_takes_columns_without_rank_as_mindspore(case):
    want = WANT["errors"]["schema_from_json"][case]
    schema = ds.Schema()
    schema.from_json({"columns": {"a": COLUMNS[case]}})
    written = json.loads(schema.to_json())["columns"][0]
    # (jisu leaves an unknown shape out; MindSpore writes it as rank 0, shape [])
    assert written.get("rank", 0) == want["rank"] and written.get("shape", []) == want["shape"]


@pytest.mark.parametrize("level", [ds.Shuffle.FILES, ds.Shuffle.INFILE])
def test_random_sampler_levels_shuffle_a_record_source_as_its_shuffle_argument(tmp_path, level):
    # MindSpore's MindDataset takes RandomSampler(shuffle=FILES/INFILE) as its own shuffle level
    writer = ds.FileWriter(str(tmp_path / "f.mindrecord"), shard_num=3)
    writer.add_schema({"x": {"type": "int32"}})
    writer.write_raw_data([{"x": i} for i in range(12)])
    writer.commit()

    def rows(**kwargs):
        ds.config.set_seed(5)
        data = ds.MindDataset(str(tmp_path / "f.mindrecord"), **kwargs)
        return [int(r[0]) for r in data.create_tuple_iterator(output_numpy=True)]

    assert rows(sampler=ds.RandomSampler(shuffle=level)) == rows(shuffle=level)
    assert sorted(rows(shuffle=level)) == list(range(12))
    with pytest.raises(RuntimeError, match="RandomSampler"):
        ds.MindDataset(
            str(tmp_path / "f.mindrecord"), sampler=ds.RandomSampler(True, shuffle=level)
        )
