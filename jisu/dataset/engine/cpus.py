"""How many CPUs this process may really use (affinity and cgroup quota)."""

from __future__ import annotations

import functools
import math
import os


def _cgroup_quota() -> float | None:
    """CPU quota of the cgroup (v2 ``cpu.max`` or v1 ``cfs_quota_us``), in CPUs, or None."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            quota = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period = int(f.read())
        return quota / period if quota > 0 else None
    except (OSError, ValueError):
        return None


@functools.lru_cache(maxsize=1)
def available_cpus() -> int:
    """Number of CPUs this process may run on: affinity mask, capped by a cgroup quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        count = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        count = min(count, max(1, math.ceil(quota)))
    return max(1, count)
