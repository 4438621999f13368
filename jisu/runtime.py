"""MindSpore's ``mindspore.runtime`` (2.5+): memory-pool and CPU-affinity settings of its own
runtime. They are recorded in :data:`settings` and have no effect: torch's caching allocator
sizes its pool on demand (``PYTORCH_CUDA_ALLOC_CONF`` tunes it) and jisu's data workers are
clamped to the CPUs the process may use already."""

from __future__ import annotations

from typing import Any

__all__ = ["set_cpu_affinity", "set_memory", "settings"]

#: what a script asked for, by function: ``settings["set_memory"] == {"max_size": "58GB", ...}``
settings: dict[str, dict[str, Any]] = {}


def set_memory(init_size: str = "2GB", increase_size: str = "2GB", max_size: str = "1024GB",
               optimize_level: str = "O0",
               huge_page_reserve_size: str = "0GB") -> None:  # fmt: skip
    """Record MindSpore's memory-pool sizes (no effect on torch's allocator)."""
    for name, value in (("init_size", init_size), ("increase_size", increase_size),
                        ("max_size", max_size)):  # fmt: skip
        if not (isinstance(value, str) and value.upper().endswith("GB")):
            raise ValueError(f"set_memory: {name} must be a str like '2GB'. Received: {value!r}")
    settings["set_memory"] = {
        "init_size": init_size,
        "increase_size": increase_size,
        "max_size": max_size,
        "optimize_level": optimize_level,
        "huge_page_reserve_size": huge_page_reserve_size,
    }


def set_cpu_affinity(enable_affinity: bool, affinity_cpu_list: Any = None,
                     module_to_cpu_dict: Any = None, bind_file: Any = None) -> None:  # fmt: skip
    """Record MindSpore's thread-binding request (no effect)."""
    if not isinstance(enable_affinity, bool):
        raise TypeError(
            f"set_cpu_affinity: enable_affinity must be a bool. Received: {enable_affinity!r}"
        )
    settings["set_cpu_affinity"] = {
        "enable_affinity": enable_affinity,
        "affinity_cpu_list": affinity_cpu_list,
        "module_to_cpu_dict": module_to_cpu_dict,
        "bind_file": bind_file,
    }
