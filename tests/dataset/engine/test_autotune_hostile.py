"""AutoTune files as hostile input: checked in full before they reach a pipeline.

Each fault of a file is a ``ValueError`` naming the file, the key and what it allows; a file
that passes holds only what a pipeline can run with, and a stage's settings never go past the
CPUs or the in-flight work a run may have (see :mod:`jisu.dataset.core.tuning`).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.core.cpus import available_cpus
from jisu.dataset.core.tuning import (
    MAX_AUTOTUNE_FILE_BYTES,
    MAX_TUNED_INFLIGHT,
    MAX_TUNED_WORKERS,
    TunedStages,
    read_autotune_file,
    tuned_stage,
)
from jisu.dataset.engine.plan import plan


@pytest.fixture(autouse=True)
def no_tuning_left():
    yield
    ds.config.load_autotune_config(None)


def pipeline():
    data = ds.NumpySlicesDataset(np.arange(64, dtype=np.float32), shuffle=False)
    return data.map(lambda x: x + 1).batch(4)


def stage_names(data) -> list[str]:
    return [stage.name for stage in plan(data).stages]


def write(tmp_path, content, name: str = "tuned.json") -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def one_stage(**entry) -> dict:
    return {"version": 1, "cpus": 2, "stages": {"batch#3": entry}}


@pytest.mark.timeout(60)  # it hung the pipeline for ever: no worker ever took a task
def test_zero_workers_is_refused_naming_the_file_the_key_and_the_range(tmp_path):
    path = write(tmp_path, one_stage(workers=0, inflight=4))
    expected = (
        f"{re.escape(path)}: stages\\['batch#3'\\].workers must be an integer from 1 to "
        f"{MAX_TUNED_WORKERS}. Received: stages\\['batch#3'\\].workers=0"
    )
    with pytest.raises(ValueError, match=expected):
        ds.config.load_autotune_config(path)
    assert ds.config.get_autotune_config() is None  # nothing was loaded
    rows = [int(v) for (b,) in pipeline().create_tuple_iterator(output_numpy=True) for v in b]
    assert rows == list(range(1, 65))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "entry, key, high",
    [
        ({"workers": 10**9, "inflight": 4}, "workers", MAX_TUNED_WORKERS),
        ({"workers": 2, "inflight": 10**9}, "inflight", MAX_TUNED_INFLIGHT),
        ({"workers": 2, "inflight": 0}, "inflight", MAX_TUNED_INFLIGHT),
        ({"workers": -1, "inflight": 4}, "workers", MAX_TUNED_WORKERS),
        ({"workers": True, "inflight": 4}, "workers", MAX_TUNED_WORKERS),
        ({"workers": 2.0, "inflight": 4}, "workers", MAX_TUNED_WORKERS),
        ({"workers": "2", "inflight": 4}, "workers", MAX_TUNED_WORKERS),
        ({"workers": None, "inflight": 4}, "workers", MAX_TUNED_WORKERS),
    ],
)
def test_out_of_range_or_mistyped_counts_are_refused(tmp_path, entry, key, high):
    """A billion workers grew memory by gigabytes (a thread each); a bool or a float is no
    count either."""
    path = write(tmp_path, one_stage(**entry))
    with pytest.raises(
        ValueError, match=rf"stages\['batch#3'\]\.{key} must be an integer from 1 to {high}\."
    ):
        ds.config.load_autotune_config(path)


@pytest.mark.parametrize(
    "content, message",
    [
        ("[1, 2]", "its top level must be a JSON object, not an array"),
        ('"stages"', "its top level must be a JSON object, not a string"),
        ("null", "its top level must be a JSON object, not null"),
        ("[" * 200_000, "its JSON nests too deeply to read"),
        ('{"a":' * 100_000, "its JSON nests too deeply to read"),
        ('{"version": 1, "stages": {"batch#3": ' + "[" * 100_000, "its JSON nests too deeply"),
        ("{", "it is not valid JSON"),
        ("", "it is not valid JSON"),
        ('{"version": 1, "stages": {}, "cpus": ' + "9" * 5000 + "}", "it is not valid JSON"),
        (b"\xff\xfe{}", "it is not UTF-8 text"),
        ({"hello": 1}, "unknown key 'hello' \\(allowed: version, cpus, stages\\)"),
        ({"version": 1}, "it has no key 'stages'"),
        ({"stages": {}}, "it has no key 'version'"),
    ],
)
def test_a_file_of_another_shape_is_not_an_autotune_file(tmp_path, content, message):
    """A list raised a bare AttributeError (``.get`` of a list), deep brackets a bare
    RecursionError from the parser."""
    path = write(tmp_path, content)
    with pytest.raises(
        ValueError, match=f"{re.escape(path)} is not a jisu AutoTune file: {message}"
    ):
        ds.config.load_autotune_config(path)


def stages(**entries) -> dict:
    """A version-1 file with these stages (stage ids are keyword names: ``batch_3=...``
    is ``batch#3``)."""
    return {"version": 1, "stages": {k.replace("_", "#"): v for k, v in entries.items()}}


_ONE = {"workers": 1, "inflight": 1}
_KEY = r"stages\['batch#3'\]"


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"version": True, "stages": {}}, "version must be 1 .*Received: version=True"),
        ({"version": 2, "stages": {}}, "version must be 1 .*Received: version=2"),
        ({"version": 1.0, "stages": {}}, "version must be 1 .*Received: version=1.0"),
        ({"version": 1, "stages": []}, "stages must be an object of stage id -> settings, not an"),
        ({"version": 1, "cpus": 0, "stages": {}}, "cpus must be an integer from 1 to"),
        ({"version": 1, "stages": {"batch": _ONE}}, "stage id 'batch' is not an op name and"),
        (stages(batch_0=_ONE), "stage id 'batch#0' is not"),
        ({"version": 1, "stages": {"../x#1": _ONE}}, "stage id '../x#1' is not"),
        (stages(batch_3=4), f"{_KEY} must be an object with keys workers and inflight, not a num"),
        (stages(batch_3={"workers": 1}), f"{_KEY} must have exactly the keys workers and "
                                         "inflight; missing: 'inflight'"),
        (one_stage(workers=1, inflight=1, prefetch=9), f"{_KEY} must have exactly the keys "
                                                       "workers and inflight; unknown: 'prefetch'"),
    ],
)  # fmt: skip
def test_wrong_values_are_named_by_their_key(tmp_path, settings, message):
    path = write(tmp_path, settings)
    with pytest.raises(ValueError, match=f"{re.escape(path)}: {message}"):
        ds.config.load_autotune_config(path)


def test_a_file_larger_than_the_cap_is_not_read(tmp_path):
    many = {f"map#{i}": {"workers": 1, "inflight": 1} for i in range(1, 40_000)}
    path = write(tmp_path, {"version": 1, "stages": many})
    assert os.path.getsize(path) > MAX_AUTOTUNE_FILE_BYTES
    with pytest.raises(ValueError, match=f"it is larger than {MAX_AUTOTUNE_FILE_BYTES} bytes"):
        ds.config.load_autotune_config(path)


def test_a_faulty_file_leaves_the_loaded_settings_as_they_were(tmp_path):
    good = write(tmp_path, one_stage(workers=1, inflight=2), "good.json")
    ds.config.load_autotune_config(good)
    with pytest.raises(ValueError):
        ds.config.load_autotune_config(write(tmp_path, "[1, 2]", "bad.json"))
    assert ds.config.get_autotune_config() == {"batch#3": {"workers": 1, "inflight": 2}}
    assert ds.config.get_autotune_config().path == good


@pytest.mark.timeout(60)
def test_a_stage_the_pipeline_does_not_have_is_reported_when_the_iterator_is_made(tmp_path):
    data = pipeline()
    assert stage_names(data) == ["batch#3"]
    two = stages(batch_3={"workers": 1, "inflight": 2}, map_7={"workers": 2, "inflight": 4})
    path = write(tmp_path, two)
    ds.config.load_autotune_config(path)  # the file itself is well formed
    expected = (
        f"{re.escape(path)} names stage\\(s\\) 'map#7', which this pipeline does not have "
        r"\(its parallel stages: batch#3\); their settings are not used here"
    )
    with pytest.warns(UserWarning, match=expected):
        rows = sum(len(b) for (b,) in data.create_tuple_iterator(num_epochs=1))
    assert rows == 64  # the pipeline runs, with batch#3's settings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per file and stages
        assert sum(len(b) for (b,) in data.create_tuple_iterator(num_epochs=1)) == 64
    ds.config.load_autotune_config(None)


@pytest.mark.timeout(60)
def test_a_file_tuned_on_a_bigger_machine_runs_within_this_ones_cpus(tmp_path):
    """The largest valid counts: the stage gets at most the CPUs this process may use, and no
    more in flight than its plan plus the workers the tuning added."""
    path = write(tmp_path, one_stage(workers=MAX_TUNED_WORKERS, inflight=MAX_TUNED_INFLIGHT))
    ds.config.load_autotune_config(path)
    ds.config.set_enable_profiler(True)
    try:
        iterator = pipeline().create_tuple_iterator(num_epochs=1, output_numpy=True)
        rows = [int(v) for (b,) in iterator for v in b]
        (stage,) = iterator.profile()["stages"]
    finally:
        ds.config.set_enable_profiler(False)
    assert rows == list(range(1, 65))
    assert stage["workers"] == available_cpus()


def test_tuned_counts_are_clamped_to_the_cpus_and_the_planned_work_in_flight():
    big = {"workers": MAX_TUNED_WORKERS, "inflight": MAX_TUNED_INFLIGHT}
    assert tuned_stage("map#2", big, 1, 17, None, cpus=4) == (4, 20)  # 17 + 3 added workers
    assert tuned_stage("map#2", big, 1, 17, 2, cpus=4) == (2, 18)  # an explicit count
    assert tuned_stage("map#2", {"workers": 2, "inflight": 3}, 1, 17, None, cpus=4) == (2, 3)
    # settings that bypassed the check (set by hand) still never give a stage no worker
    assert tuned_stage("map#2", {"workers": 0, "inflight": 0}, 1, 17, None, cpus=4) == (1, 1)


@pytest.mark.timeout(60)
def test_settings_set_by_hand_with_zero_workers_do_not_hang(monkeypatch):
    """Defence in depth: the engine itself never runs a stage with no worker."""
    monkeypatch.setattr(ds.config, "_tuned", {"batch#3": {"workers": 0, "inflight": 0}})
    rows = [int(v) for (b,) in pipeline().create_tuple_iterator(output_numpy=True) for v in b]
    assert rows == list(range(1, 65))


def test_what_autotune_writes_reads_back(tmp_path):
    """The writer stays within what the reader accepts, also on a machine with more CPUs
    than a file may hold."""
    import threading

    from jisu.dataset.engine.stats import StageStats
    from jisu.profiler.autotune import AutoTuner, write_settings

    class Pool:
        workers = 3

    tuner = AutoTuner(cpus=4096, budget_bytes=1 << 30)
    tuner.register("map#2", Pool(), threading.Semaphore(1), StageStats("map#2", 3), 10**6)
    path = str(tmp_path / "tuned.json")
    write_settings(path, tuner.settings())
    loaded = read_autotune_file(path)
    assert loaded == {"map#2": {"workers": 3, "inflight": MAX_TUNED_INFLIGHT}}
    with open(path) as f:
        assert json.load(f)["cpus"] == MAX_TUNED_WORKERS


# ------------------------------------------------------------------ fuzzing the reader

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_count = st.integers(-3, 70_000) | st.sampled_from([0, 1, 1024, 1025, 65536, 65537]) | _json
_entry = (
    st.fixed_dictionaries({"workers": _count, "inflight": _count})
    | st.dictionaries(st.sampled_from(["workers", "inflight", "prefetch"]), _count, max_size=3)
    | _json
)
_stage_id = st.sampled_from(["map#2", "batch#3", "NumpySlicesDataset#1", "map#0"]) | st.text(
    max_size=12
)
_settings = (
    st.fixed_dictionaries(
        {
            "version": st.just(1) | _json,
            "stages": st.dictionaries(_stage_id, _entry, max_size=4) | _json,
        },
        optional={"cpus": _count, "hello": _json},
    )
    | _json
)


def _text_of(value, cut):
    text = json.dumps(value)
    return text if cut is None else text[: cut % (len(text) + 1)]


_contents = (
    st.builds(_text_of, _settings, st.none() | st.integers(0, 10_000)).map(str.encode)
    | st.binary(max_size=64)
    | st.builds(lambda n, c: c * n, st.integers(0, 30_000), st.sampled_from([b"[", b'{"a":', b"{"]))
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=_contents)
def test_fuzz_the_reader_gives_a_valid_config_or_the_documented_error(content):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tuned.json")
        with open(path, "wb") as f:
            f.write(content)
        try:
            loaded = read_autotune_file(path)
        except ValueError as exc:
            assert path in str(exc)
            assert len(str(exc)) < 600  # a message, not the file
            return
    assert isinstance(loaded, TunedStages) and loaded.path == path
    for stage_id, entry in loaded.items():
        assert re.fullmatch(r"\w+#[1-9][0-9]*", stage_id)
        assert set(entry) == {"workers", "inflight"}
        assert all(type(v) is int for v in entry.values())
        assert 1 <= entry["workers"] <= MAX_TUNED_WORKERS
        assert 1 <= entry["inflight"] <= MAX_TUNED_INFLIGHT
