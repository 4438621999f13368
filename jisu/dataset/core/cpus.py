"""How many CPUs this process may really use (affinity and cgroup quota).

``JISU_CPUS=N`` in the environment (a whole number >= 1) makes :func:`available_cpus` report N
instead, whatever the machine has: for tests that must behave as on another machine (the suite
run "as on 16 CPUs" on a 2-core one), and for containers whose limit the kernel does not show.
It is read at every call (worker processes inherit it; unset or empty: the detected count,
which is cached). Not a limit: the process may still run on every CPU it has.
"""

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


#: the environment variable that overrides the detected CPU count
CPUS_ENV = "JISU_CPUS"


def available_cpus() -> int:
    """Number of CPUs this process may run on: affinity mask, capped by a cgroup quota; or
    the value of ``JISU_CPUS`` when it is set (a whole number >= 1)."""
    override = os.environ.get(CPUS_ENV, "").strip()
    if override:
        try:
            count = int(override)
        except ValueError:
            count = 0
        if count < 1:
            raise ValueError(
                f"{CPUS_ENV} must be a whole number >= 1 (the CPU count to report). "
                f"Received: {CPUS_ENV}={override!r}"
            )
        return count
    return detected_cpus()


@functools.lru_cache(maxsize=1)
def detected_cpus() -> int:
    """The CPUs this process may run on, as the system says: affinity mask, capped by a
    cgroup quota (``JISU_CPUS`` ignored)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        count = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        count = min(count, max(1, math.ceil(quota)))
    return max(1, count)
