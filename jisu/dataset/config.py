"""Global pipeline settings: seed, prefetch depth, default worker count, executor.

Mirrors ``mindspore.dataset.config``. Settings are read when an iterator is created.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from .core.cpus import available_cpus
from .core.error_types import ArgumentError
from .core.executor import Executor
from .core.switches import (  # noqa: F401  (MindSpore's switches jisu stores: see there)
    autotune_path,
    get_callback_timeout,
    get_debug_mode,
    get_dynamic_shape,
    get_iterator_mode,
    get_multiprocessing_start_method,
    get_video_backend,
    set_callback_timeout,
    set_debug_mode,
    set_dynamic_shape,
    set_iterator_mode,
    set_multiprocessing_start_method,
    set_video_backend,
)
from .core.tuning import read_autotune_file

if TYPE_CHECKING:
    from .engine.ray.executor import RayExecutor

_DEFAULT_WORKERS = 8

_seed: int | None = None
_session_seed = secrets.randbits(32)
_prefetch_size = 16
_num_parallel_workers = _DEFAULT_WORKERS


_worker_restart = False
_profiler = False
_autotune = False
_auto_offload = False
_autotune_file: str | None = None
_tuned: dict | None = None
_error_samples_mode = "raise"
_shared_mem = True
_watchdog = True
_fast_recovery = True
_monitor_sampling_interval = 1000
_executor: RayExecutor | None = None
_pipeline_process = False


def set_executor(executor: RayExecutor | None) -> None:
    """Where the parallel stages of iterators created afterwards run: ``None`` (default) on
    local threads and worker processes; a :class:`~jisu.dataset.RayExecutor` on the actors of
    a Ray cluster. The plan (order, shuffles, shards, random streams) never depends on the
    executor, so the output is the same and ``get_state``/``set_state`` carry over between
    executors.

    Example:
        >>> import jisu.dataset as ds
        >>> ds.config.set_executor(ds.RayExecutor(num_workers=8))  # doctest: +SKIP
        >>> ds.config.set_executor(None)
    """
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(
            "set_executor: executor must be a jisu.dataset.RayExecutor or None. "
            f"Received: executor={executor!r}"
        )
    global _executor
    _executor = executor


def get_executor() -> RayExecutor | None:
    """The executor set by :func:`set_executor` (None: local threads and processes)."""
    return _executor


def set_error_samples_mode(mode: str) -> None:
    """What a pipeline built afterwards does when an op fails on a sample (a corrupt image):
    ``"raise"`` (default) stops with an error naming the op, column and sample; ``"skip"``
    drops the sample, counts it, and logs the count at the end of each epoch. Batches are
    refilled from the following samples, so they keep their size."""
    if mode not in ("raise", "skip"):
        raise ValueError(
            f"set_error_samples_mode: mode must be 'raise' or 'skip'. Received: mode={mode!r}"
        )
    global _error_samples_mode
    _error_samples_mode = mode


def get_error_samples_mode() -> str:
    return _error_samples_mode


def set_enable_profiler(enabled: bool) -> None:
    """Collect per-stage statistics in iterators created afterwards (default off; the cost
    is a few additions per task): ``iterator.profile()`` then reports rows/s, busy shares,
    queue occupancy and the bottleneck stage."""
    global _profiler
    _profiler = bool(enabled)


def get_enable_profiler() -> bool:
    return _profiler


def set_enable_autotune(
    enable: bool, filepath_prefix: str | None = None, filepath: str | None = None
) -> None:
    """Tune pipelines created afterwards during their first epoch (default off): the stage
    holding the pipeline back gets more workers, within the CPUs the process may use and a
    memory budget; every change is logged (logger ``jisu.dataset.autotune``). The tuned
    settings are written as JSON at the end of the first epoch to ``filepath`` (jisu's
    argument) or, as MindSpore names it, ``filepath_prefix + RANK_ID + ".json"``;
    :func:`load_autotune_config` applies them to a later run."""
    if not isinstance(enable, bool):  # MindSpore 2.10: a TypeError for 1 too
        raise TypeError(f"set_enable_autotune: enable must be a bool. Received: {enable!r}")
    path = autotune_path(enable, filepath, filepath_prefix)
    global _autotune, _autotune_file
    _autotune, _autotune_file = bool(enable), path


def get_enable_autotune() -> bool:
    return _autotune


def get_autotune_filepath() -> str | None:
    return _autotune_file


def load_autotune_config(filepath: str | None) -> None:
    """Start pipelines created afterwards with the settings AutoTune saved (None: stop).

    The file is checked in full first (see :mod:`.core.tuning`): its size (at most
    ``MAX_AUTOTUNE_FILE_BYTES``), JSON, keys, types and ranges (``workers`` from 1 to
    ``MAX_TUNED_WORKERS``, ``inflight`` from 1 to ``MAX_TUNED_INFLIGHT``); a faulty file
    changes nothing. When an iterator starts, every stage the file names must be one of its
    pipeline's stages, and the workers are clamped to the CPUs the process may use.

    Raises:
        ValueError: the file is not a valid AutoTune file (naming it, the key and what it
            allows).
    """
    global _tuned
    if filepath is None:
        _tuned = None
        return
    _tuned = read_autotune_file(filepath)


def get_autotune_config() -> dict | None:
    """The loaded AutoTune settings (stage id -> workers, in-flight slots), or None."""
    return _tuned


# Pillow raises DecompressionBombError above twice its MAX_IMAGE_PIXELS (89,478,485).
_DEFAULT_MAX_IMAGE_PIXELS = 2 * 89_478_485
_max_image_pixels: int | None = _DEFAULT_MAX_IMAGE_PIXELS
_multiprocessing_timeout_interval = 300.0
_sample_timeout: float | None = None


def set_max_image_pixels(pixels: int | None) -> None:
    """Largest image (width x height, as its header declares) that decode ops accept, checked
    before any pixel memory is allocated: a tiny file that declares a huge image (a
    "decompression bomb") is refused like any other bad sample. The default, 178,956,970
    pixels, is where Pillow raises ``DecompressionBombError``; ``None`` removes the limit."""
    if pixels is not None and (
        isinstance(pixels, bool) or not isinstance(pixels, int) or pixels < 1
    ):
        raise ValueError(
            f"set_max_image_pixels: pixels must be an int >= 1 or None. Received: pixels={pixels!r}"
        )
    global _max_image_pixels
    _max_image_pixels = pixels


def get_max_image_pixels() -> int | None:
    return _max_image_pixels


def run_time_settings() -> dict:
    """The settings ops read while they run (not when the pipeline is built): a worker
    process or Ray actor applies them (:func:`apply_run_time_settings`), so that it computes
    what a thread of this process would — its own copy of this module may be older."""
    return {"max_image_pixels": get_max_image_pixels()}


def apply_run_time_settings(settings: dict) -> None:
    """Take the settings :func:`run_time_settings` gave in the driver."""
    set_max_image_pixels(settings["max_image_pixels"])


def set_multiprocessing_timeout_interval(interval: float) -> None:
    """Seconds after which a task (a sample or a batch) that is still running is reported:
    a warning naming the op, the worker and the sample, repeated at this interval while it
    runs (MindSpore's setting of the same name; default 300). It only warns; see
    :func:`set_sample_timeout` to fail instead."""
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval > 0:
        number = isinstance(interval, (int, float)) and not isinstance(interval, bool)
        raise (ValueError if number else ArgumentError)(
            "set_multiprocessing_timeout_interval: interval must be a number of seconds > 0. "
            f"Received: interval={interval!r}"
        )
    global _multiprocessing_timeout_interval
    _multiprocessing_timeout_interval = float(interval)


def get_multiprocessing_timeout_interval() -> float:
    return _multiprocessing_timeout_interval


def set_sample_timeout(seconds: float | None) -> None:
    """Opt-in: fail the pipeline with a ``TimeoutError`` (naming the op, the worker and the
    sample) when one task runs longer than ``seconds``; ``None`` (default) waits forever,
    warning every :func:`get_multiprocessing_timeout_interval` seconds. The error is also a
    ``RuntimeError``, like every pipeline error. The pipeline stops without waiting for the task:
    a stuck worker process is killed; a stuck thread (threads cannot be killed) ends when its
    op returns."""
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0
    ):
        raise ValueError(
            "set_sample_timeout: seconds must be a number > 0 or None. "
            f"Received: seconds={seconds!r}"
        )
    global _sample_timeout
    _sample_timeout = None if seconds is None else float(seconds)


def get_sample_timeout() -> float | None:
    return _sample_timeout


def set_worker_restart(enabled: bool) -> None:
    """Replace a worker process that dies (e.g. OOM-killed) and re-run its task, instead of
    failing the pipeline with ``WorkerDiedError`` (default off). At most 3 restarts per stage."""
    global _worker_restart
    _worker_restart = bool(enabled)


def get_worker_restart() -> bool:
    return _worker_restart


def _value_error(value: object) -> type[ValueError]:
    """The class of a setter's refusal of ``value``: a ValueError for an int out of range,
    one that is a TypeError too for a value of another type, a bool included
    (``set_seed(True)``: MindSpore 2.10's TypeError "seed isn't of type int")."""
    return ValueError if isinstance(value, int) and not isinstance(value, bool) else ArgumentError


def set_seed(seed: int) -> None:
    """Seed every random decision of later pipelines (shuffles, random ops).

    Without a seed, each process draws one at import time: runs differ, but within a run the
    output still does not depend on worker counts.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise _value_error(seed)(
            f"set_seed: seed must be an int in [0, 2**64). Received: seed={seed!r}"
        )
    global _seed
    _seed = seed


#: what ``get_seed()`` reports before ``set_seed`` (MindSpore's default: mt19937's seed)
DEFAULT_SEED = 5489


def get_seed() -> int:
    """The seed set by :func:`set_seed`, or 5489 before any (what MindSpore reports).

    As in MindSpore, the default is only a report: until ``set_seed`` is called, pipelines
    draw from this process's random seed (:func:`pipeline_seed`), so runs differ.
    """
    return DEFAULT_SEED if _seed is None else _seed


def pipeline_seed() -> int:
    """The seed pipelines draw from: the one set by :func:`set_seed`, or this process's random
    default (drawn at import time: runs differ, but within a run the output still does not
    depend on worker counts)."""
    return _session_seed if _seed is None else _seed


def seed_was_set() -> bool:
    return _seed is not None


def set_prefetch_size(size: int) -> None:
    """Rows each pipeline stage may prepare ahead of its consumer (default 16)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise _value_error(size)(
            f"set_prefetch_size: size must be an int >= 1. Received: size={size!r}"
        )
    global _prefetch_size
    _prefetch_size = size


def get_prefetch_size() -> int:
    return _prefetch_size


def set_num_parallel_workers(num: int) -> None:
    """Default worker count of ops that are not given one (clamped to usable CPUs when used)."""
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise _value_error(num)(
            f"set_num_parallel_workers: num must be an int >= 1. Received: num={num!r}"
        )
    global _num_parallel_workers
    _num_parallel_workers = num


def get_num_parallel_workers() -> int:
    """The default worker count, clamped to the CPUs this process may use."""
    return min(_num_parallel_workers, available_cpus())


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name}: the argument must be a bool. Received: {value!r}")
    return value


def set_auto_offload(offload: bool) -> None:
    """MindSpore's automatic offload: with True, every ``map`` built afterwards whose ops end
    with ops that run on the device (Rescale, Normalize, HWC2CHW, TypeCast) leaves them to the
    device, as ``map(..., offload=True)`` does (``Model.train`` applies the offload module);
    maps without such a tail are unchanged. Default False."""
    if not isinstance(offload, bool):
        raise TypeError(f"set_auto_offload: offload must be a bool. Received: offload={offload!r}")
    global _auto_offload
    _auto_offload = offload


def get_auto_offload() -> bool:
    """Whether :func:`set_auto_offload` is on (default False)."""
    return _auto_offload


def set_enable_shared_mem(enable: bool) -> None:
    """Worker processes (``python_multiprocessing=True``) hand their results back through
    shared memory (default True); False: results travel pickled through a pipe (slower; for
    a machine whose ``/dev/shm`` is small). Read when an iterator is created."""
    global _shared_mem
    _shared_mem = _check_bool("set_enable_shared_mem", enable)


def get_enable_shared_mem() -> bool:
    return _shared_mem


def set_pipeline_process(enable: bool) -> None:
    """Run each pipeline created from now on in a child process of its own (default False):
    its stages, threads and workers leave the training process, which then only takes rows
    from shared memory, so no pipeline thread competes with a Python-heavy training step for
    the GIL. Same rows, order, state and resume as in this process; the pipeline's sources
    and ops must pickle with cloudpickle. Read when an iterator is created."""
    global _pipeline_process
    _pipeline_process = _check_bool("set_pipeline_process", enable)


def get_pipeline_process() -> bool:
    return _pipeline_process


def set_auto_num_workers(enable: bool) -> None:
    """MindSpore's automatic worker counts. In jisu that job is AutoTune's: True turns it on
    (as ``set_enable_autotune(True)``, without a settings file), False off."""
    set_enable_autotune(_check_bool("set_auto_num_workers", enable))


def get_auto_num_workers() -> bool:
    return get_enable_autotune()


def set_enable_watchdog(enable: bool) -> None:
    """The warnings about tasks that run too long (every
    :func:`get_multiprocessing_timeout_interval` seconds) on (default) or off. A worker
    process that dies is detected either way (the pipeline never hangs on it), and
    :func:`set_sample_timeout` still applies."""
    global _watchdog
    _watchdog = _check_bool("set_enable_watchdog", enable)


def get_enable_watchdog() -> bool:
    return _watchdog


def set_fast_recovery(fast_recovery: bool) -> None:
    """Accepted for MindSpore compatibility, without effect: MindSpore trades exactness for
    speed when it resumes; jisu's resume (``get_state``/``set_state``, checkpoints) is always
    exact and reads only the rows after the position."""
    global _fast_recovery
    _fast_recovery = _check_bool("set_fast_recovery", fast_recovery)


def get_fast_recovery() -> bool:
    return _fast_recovery


def set_monitor_sampling_interval(interval: int) -> None:
    """Accepted for MindSpore compatibility, without effect: jisu's profiler records every
    batch handed out (see ``set_enable_profiler``) instead of sampling every ``interval`` ms."""
    if isinstance(interval, bool) or not isinstance(interval, int) or interval <= 0:
        raise _value_error(interval)(
            "set_monitor_sampling_interval: interval must be an int > 0 (milliseconds). "
            f"Received: interval={interval!r}"
        )
    global _monitor_sampling_interval
    _monitor_sampling_interval = interval


def get_monitor_sampling_interval() -> int:
    return _monitor_sampling_interval


_numa_enable = False


def set_numa_enable(numa_enable: bool) -> None:
    """MindSpore binds its pipeline threads to the device's NUMA node when True; jisu records
    the setting and leaves placement to the OS (its workers are processes and threads the
    kernel schedules), so it changes no result and no speed."""
    global _numa_enable
    _numa_enable = _check_bool("set_numa_enable", numa_enable)


def get_numa_enable() -> bool:
    """The setting of :func:`set_numa_enable` (False by default, as MindSpore)."""
    return _numa_enable


INT32_MAX = 2**31 - 1
_autotune_interval = 0
_sending_batches = 0


def _checked_int(
    setter: str, name: str, value: object, low: int, high: int, out_of_range: type = ValueError
) -> int:
    """``value`` if it is an int in [low, high]: a TypeError for another type (a bool
    included), ``out_of_range`` outside the range, as MindSpore 2.10's config setters."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{setter}: {name} must be an int. Received: {name}={value!r}")
    if not low <= value <= high:
        raise out_of_range(f"{setter}: {name} must be in [{low}, {high}]. Received: {name}={value}")
    return value


def set_autotune_interval(interval: int) -> None:
    """Accepted for MindSpore compatibility, without effect: the milliseconds (0 to 2**31 - 1;
    0, the default, is once per epoch) between MindSpore's AutoTune adjustments; jisu's
    AutoTune adjusts while the first epoch runs at a pace of its own."""
    global _autotune_interval
    _autotune_interval = _checked_int("set_autotune_interval", "interval", interval, 0, INT32_MAX)


def get_autotune_interval() -> int:
    return _autotune_interval


def set_sending_batches(batch_num: int) -> None:
    """Accepted for MindSpore compatibility, without effect: how many batches MindSpore's
    device queue sends in sink mode before it waits (any int64; MindSpore 2.10 has no
    getter); jisu's sink mode feeds the device from the iterator as steps run. Beyond int64:
    a TypeError that is a ValueError too (MindSpore's is a TypeError)."""
    global _sending_batches
    _sending_batches = _checked_int(
        "set_sending_batches", "batch_num", batch_num, -(2**63), 2**63 - 1, ArgumentError
    )
