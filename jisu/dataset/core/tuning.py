"""Saved AutoTune settings: read, checked in full, and applied to a pipeline's stages.

An AutoTune file (written by :class:`jisu.profiler.AutoTuner` at the end of a first epoch) is
JSON of this one shape::

    {"version": 1, "cpus": 8, "stages": {"map#2": {"workers": 3, "inflight": 19}}}

``cpus`` (the CPUs of the machine that tuned) is optional. The file is input like any other:
it may have been edited, truncated, or written by someone else. Before it reaches a pipeline
it is checked whole — size, JSON, top-level type, keys, types, ranges — and any fault is a
``ValueError`` naming the file, the key and what is allowed: a ``"workers": 0`` would
otherwise hang the stage (no worker ever takes its tasks), a ``10**9`` start a billion
threads, a ``[1, 2]`` or a deep nest of brackets raise a bare ``AttributeError`` or
``RecursionError``. When an iterator starts, every stage the file names must be a stage of
its pipeline (:func:`check_stages`), and a stage's settings are clamped to the CPUs this
process may use (:func:`tuned_stage`), as every worker count in jisu is.
"""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
from collections.abc import Collection
from typing import Any

logger = logging.getLogger("jisu.dataset.autotune")

#: the most workers a saved stage may ask for (AutoTune never gives a stage more workers than
#: the CPUs, and tunes at most this many CPUs); a run uses at most the CPUs it may use
MAX_TUNED_WORKERS = 1024
#: the most tasks in flight a saved stage may ask for (AutoTune adds one per worker it adds to
#: the planned count, about workers + ``prefetch_size``); whatever the file says, a run never
#: goes past its planned in-flight count plus the workers the tuning added (:func:`tuned_stage`)
MAX_TUNED_INFLIGHT = 65536
#: the largest AutoTune file read (a file for 10,000 stages is about 600 KB)
MAX_AUTOTUNE_FILE_BYTES = 1 << 20
#: a stage id as AutoTune writes it: the op's name and its structural id (``map#2``)
_STAGE_ID = re.compile(r"\w{1,100}#[1-9][0-9]{0,8}")
_TOP_KEYS = ("version", "cpus", "stages")
_STAGE_KEYS = ("workers", "inflight")


class TunedStages(dict):
    """Stage id -> ``{"workers": int, "inflight": int}`` of a checked AutoTune file, which
    :attr:`path` names (so that errors found later, when a pipeline starts, can name it)."""

    def __init__(self, stages: dict[str, dict[str, int]], path: str) -> None:
        super().__init__(stages)
        self.path = path


def _shown(value: Any) -> str:
    """``value`` for an error message, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    names.update({int: "a number", float: "a number", type(None): "null"})
    return names.get(type(value), type(value).__name__)


def _int_in(where: str, key: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(
            f"{where}: {key} must be an integer from {low} to {high}. "
            f"Received: {key}={_shown(value)}"
        )
    return value


def read_autotune_file(path: str | os.PathLike) -> TunedStages:
    """Read and check the AutoTune file ``path``; returns its stages.

    Raises:
        OSError: the file cannot be read (``FileNotFoundError`` names it).
        ValueError: the file is larger than :data:`MAX_AUTOTUNE_FILE_BYTES`, is not UTF-8
            JSON (or nests too deeply to parse), or is not of the shape above: the message
            names the file, the key and what the key allows (``workers`` from 1 to
            :data:`MAX_TUNED_WORKERS`, ``inflight`` from 1 to :data:`MAX_TUNED_INFLIGHT`).
    """
    path = os.fspath(path)
    where = f"load_autotune_config: {path}"
    not_ours = f"{where} is not a jisu AutoTune file"
    with open(path, "rb") as f:
        data = f.read(MAX_AUTOTUNE_FILE_BYTES + 1)  # never more than the cap, whatever it holds
    if len(data) > MAX_AUTOTUNE_FILE_BYTES:
        raise ValueError(f"{not_ours}: it is larger than {MAX_AUTOTUNE_FILE_BYTES} bytes")
    try:
        settings = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{not_ours}: it is not UTF-8 text (byte {exc.start})") from None
    except RecursionError:  # json's parser recurses once per nested bracket
        raise ValueError(f"{not_ours}: its JSON nests too deeply to read") from None
    except ValueError as exc:  # JSONDecodeError; an integer of more than 4,300 digits
        raise ValueError(f"{not_ours}: it is not valid JSON ({exc})") from None
    if not isinstance(settings, dict):
        raise ValueError(
            f"{not_ours}: its top level must be a JSON object, not {_json_type(settings)}"
        )
    unknown = [key for key in settings if key not in _TOP_KEYS]
    if unknown:
        raise ValueError(
            f"{not_ours}: unknown key {_shown(unknown[0])} (allowed: {', '.join(_TOP_KEYS)})"
        )
    if "version" not in settings or "stages" not in settings:
        missing = "version" if "version" not in settings else "stages"
        raise ValueError(f"{not_ours}: it has no key '{missing}'")
    version = settings["version"]
    if isinstance(version, bool) or version != 1 or not isinstance(version, int):
        raise ValueError(
            f"{where}: version must be 1 (the only version there is). "
            f"Received: version={_shown(version)}"
        )
    if "cpus" in settings:
        _int_in(where, "cpus", settings["cpus"], 1, MAX_TUNED_WORKERS)
    stages = settings["stages"]
    if not isinstance(stages, dict):
        raise ValueError(
            f"{where}: stages must be an object of stage id -> settings, not {_json_type(stages)}"
        )
    checked: dict[str, dict[str, int]] = {}
    for stage_id, entry in stages.items():
        if not _STAGE_ID.fullmatch(stage_id):
            raise ValueError(
                f"{where}: stage id {_shown(stage_id)} is not an op name and a number "
                "(as AutoTune writes them: 'map#2', 'batch#3')"
            )
        key = f"stages[{stage_id!r}]"
        if not isinstance(entry, dict):
            raise ValueError(
                f"{where}: {key} must be an object with keys workers and inflight, not "
                f"{_json_type(entry)}"
            )
        wrong = sorted(set(entry) ^ set(_STAGE_KEYS))
        if wrong:
            raise ValueError(
                f"{where}: {key} must have exactly the keys workers and inflight; "
                f"{'unknown' if wrong[0] in entry else 'missing'}: {_shown(wrong[0])}"
            )
        checked[stage_id] = {
            "workers": _int_in(where, f"{key}.workers", entry["workers"], 1, MAX_TUNED_WORKERS),
            "inflight": _int_in(where, f"{key}.inflight", entry["inflight"], 1, MAX_TUNED_INFLIGHT),
        }
    return TunedStages(checked, path)


_warned: set[tuple[str, tuple[str, ...]]] = set()


def check_stages(tuned: dict[str, dict[str, int]], stage_names: Collection[str]) -> None:
    """Warn (once per file and set of stages) when the loaded AutoTune settings name stages
    that ``stage_names`` (the stages of the pipeline about to run) lacks.

    A stage id is the op's name and its position in the pipeline; the settings of a stage
    this pipeline lacks are not used. Not an error: the settings stay loaded for every
    pipeline built afterwards, and a training's evaluation pipeline (``Model.fit``'s
    ``valid_dataset``) has other stages than the tuned training pipeline; its stages that
    share an id with a tuned one get that stage's (clamped) settings.
    """
    unknown = tuple(stage for stage in tuned if stage not in stage_names)
    path = str(getattr(tuned, "path", "the loaded AutoTune settings"))
    if not unknown or (path, unknown) in _warned:
        return
    _warned.add((path, unknown))
    stages = ", ".join(sorted(stage_names)) or "none"
    warnings.warn(
        f"load_autotune_config: {path} names stage(s) {', '.join(map(repr, unknown))}, which "
        f"this pipeline does not have (its parallel stages: {stages}); their settings are not "
        "used here. Was the file saved for another pipeline? ds.config.load_autotune_config"
        "(None) unloads it",
        stacklevel=4,
    )


def tuned_stage(
    stage_id: str,
    tuned: dict[str, int],
    planned_workers: int,
    planned_inflight: int,
    max_workers: int | None,
    cpus: int,
) -> tuple[int, int]:
    """The ``(workers, inflight)`` a stage runs with under its saved settings ``tuned``.

    Workers: the saved count, at most ``cpus`` (the CPUs this process may use: a file tuned
    on a bigger machine is clamped, with a debug log, as any worker count is) and at most
    ``max_workers`` (an op's explicit ``num_parallel_workers``). In flight: the saved count,
    at most the planned one plus the workers added over the plan, so that a file never makes
    a stage hold more work in memory than AutoTune itself could have given it."""
    workers = max(1, min(int(tuned["workers"]), cpus))
    if workers < tuned["workers"]:
        logger.debug(
            "autotune: stage %s: %d saved workers clamped to the %d CPUs this process may use",
            stage_id,
            tuned["workers"],
            cpus,
        )
    if max_workers is not None:
        workers = min(workers, max_workers)
    ceiling = planned_inflight + max(0, workers - planned_workers)
    inflight = max(1, min(int(tuned["inflight"]), ceiling))
    return workers, inflight
