"""Whether this CPU computes bf16 in hardware, and what the low-precision levels cost on a CPU
that does not.

On CPU the low dtype of O1/O2/O3 is bf16. A CPU with ``avx512_bf16`` or ``amx_bf16`` (x86)
or ``bf16`` (Arm) runs oneDNN's bf16 kernels; one without converts bf16 to fp32 and back in
software around every kernel, and a train step at O2 then takes longer than at O0
(:data:`SOFTWARE_BF16_COST`, measured by ``benchmarks/amp_cpu.py``). MindSpore refuses O2
on CPU outright (its CPU O2 is fp16 with a loss scale its CPU backend does not support); jisu
runs it, since bf16 trains correctly on any CPU, and warns once per process
(:class:`SoftwareBf16Warning`) with the measured cost and what to use instead. ``jisu
doctor`` gives the same advice (:func:`software_bf16_advice`), and ``jisu train`` measures
its level (``amp_level="fastest"``, :mod:`jisu.train.amp_choice`), so it does not pick O2 on
such a CPU.

The answer comes from ``/proc/cpuinfo``'s flags (read once; None where there is none, e.g.
macOS or Windows: then nothing is said), narrowed by ``ONEDNN_MAX_CPU_ISA`` /
``DNNL_MAX_CPU_ISA`` when they cap oneDNN below its bf16 instructions. ``JISU_CPU_BF16=1``
or ``=0`` overrides it (for a CPU whose flags mislead, and for tests).
"""

from __future__ import annotations

import os
import sys
import warnings

import torch
from torch import nn

__all__ = [
    "SOFTWARE_BF16_COST",
    "SoftwareBf16Warning",
    "cpu_bf16_support",
    "software_bf16_advice",
    "software_bf16_note",
    "warn_software_bf16",
]

#: train-step time at each level / at O0 on a CPU without bf16 instructions, by what torch
#: does there: "avx512" (AVX-512 without BF16/AMX, e.g. Skylake/Cascade Lake: oneDNN's jit
#: kernels emulate bf16) and "other" (AVX2 or less, or Arm without BF16: torch's reference
#: bf16 convolutions). Measured by ``python benchmarks/amp_cpu.py --repeats 3 --steps 6
#: --rounds 4`` (its ``avx512_core`` and ``avx2`` caps of oneDNN/ATen on a 2-core Xeon with
#: AMX, torch 2.13 CPU build, 2 threads, 2026-12-07): the main job's small CNN, batch 64,
#: 32x32, the median of 3 runs, each the median of 24 steps per level with the levels taking
#: turns. The machine was shared and loaded: read the figures as "about" (the same run with
#: ``--threads 1`` gave 1.9/1.7/1.6 and 5.5/5.6/5.7).
SOFTWARE_BF16_COST: dict[str, dict[str, float]] = {
    "avx512": {"O1": 1.6, "O2": 1.3, "O3": 1.2},
    "other": {"O1": 4.9, "O2": 4.6, "O3": 4.6},
}
#: where the figures above come from, named in the warning
COST_SOURCE = "benchmarks/amp_cpu.py, docs/benchmarks.md"

#: /proc/cpuinfo flags that mean bf16 arithmetic in hardware (x86: AVX-512 BF16, AMX; Arm: BF16)
_BF16_FLAGS = ("amx_bf16", "avx512_bf16", "bf16")
#: oneDNN ISA caps (ONEDNN_MAX_CPU_ISA) that still include bf16 instructions
_BF16_ISAS = ("BF16", "AMX", "FP16", "AVX10", "VNNI_2", "ALL", "DEFAULT")
#: the flags oneDNN's AVX-512 kernels (avx512_core, which emulate bf16) need
_AVX512_CORE = frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq"})
_LOW_LEVELS = ("O1", "O2", "O3", "auto")
#: a cost this many times another's is clearly more (the figures are noisy)
_CLEARLY_LESS = 1.1

#: cpu_bf16_support's answer, the software kind and why bf16 is in software (read once)
_support: list[tuple[str | None, str, str]] = []
_warned: list[str] = []  # the level already warned about in this process


class SoftwareBf16Warning(UserWarning):
    """A low-precision AMP level on a CPU without bf16 instructions (see the module)."""


def _cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags from ``/proc/cpuinfo`` (x86 ``flags``, Arm ``Features``), or
    None where the file is missing or has neither line."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            for line in file:
                key, sep, value = line.partition(":")
                if sep and key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        return None
    return None


def cpu_bf16_support() -> str | None:
    """How this CPU computes bf16: the flag that provides it ("amx_bf16", "avx512_bf16",
    "bf16"), "software" when its flags show none (or oneDNN is capped below them), or None
    when it cannot be told (no ``/proc/cpuinfo``). Read once per process."""
    override = os.environ.get("JISU_CPU_BF16", "").strip()
    if override in ("0", "1"):
        return "JISU_CPU_BF16=1" if override == "1" else "software"
    return _read()[0]


def _software_kind() -> str:
    """Which row of :data:`SOFTWARE_BF16_COST` applies: "avx512" or "other"."""
    return _read()[1]


def _why() -> str:
    """Why bf16 runs in software here, for the messages."""
    if os.environ.get("JISU_CPU_BF16", "").strip() == "0":
        return "JISU_CPU_BF16=0"
    return _read()[2]


def _read() -> tuple[str | None, str, str]:
    if not _support:
        _support.append(_read_support(_cpu_flags()))
    return _support[0]


def _read_support(flags: frozenset[str] | None) -> tuple[str | None, str, str]:
    """(cpu_bf16_support's answer, the software kind, why) from the CPU's flags and oneDNN's
    cap."""
    if flags is None:
        return None, "other", ""
    env = os.environ
    cap = (env.get("ONEDNN_MAX_CPU_ISA") or env.get("DNNL_MAX_CPU_ISA") or "").upper()
    kind = "avx512" if _AVX512_CORE.issubset(flags) and (not cap or "AVX512" in cap) else "other"
    found = next((flag for flag in _BF16_FLAGS if flag in flags), None)
    if found is not None and cap and not any(isa in cap for isa in _BF16_ISAS):
        # oneDNN told not to use the instructions the CPU has
        return "software", kind, f"oneDNN capped at {cap} by the environment"
    return found or "software", kind, "no avx512_bf16/amx_bf16/bf16 among its flags"


def software_bf16_note(level: str, device: torch.device | str = "cpu") -> str | None:
    """What ``level`` costs on ``device`` when it runs bf16 in software ("amp_level='O2' on
    this CPU runs bf16 in software (...): a train step took 1.3x the time of O0 when
    measured (...)"); None when it does not (O0, not a CPU, hardware bf16, unknown)."""
    if level not in _LOW_LEVELS or torch.device(device).type != "cpu":
        return None
    if cpu_bf16_support() != "software":
        return None
    costs = SOFTWARE_BF16_COST[_software_kind()]
    cost = costs["O1" if level == "auto" else level]
    return (
        f"amp_level='{level}' on this CPU runs bf16 in software ({_why()}): a train step "
        f"took {cost:.1f}x the time of O0 when measured on such a CPU ({COST_SOURCE})"
    )


def software_bf16_advice(level: str, device: torch.device | str = "cpu") -> str | None:
    """The warning's text, and ``jisu doctor``'s advice: :func:`software_bf16_note` and what
    to use instead: O0, or O1 where it costs clearly less than ``level`` (O1 keeps fp32
    weights and runs only matmuls and convolutions in bf16)."""
    note = software_bf16_note(level, device)
    if note is None:
        return None
    costs = SOFTWARE_BF16_COST[_software_kind()]
    own = costs["O1" if level == "auto" else level]
    then = (
        f" (or amp_level='O1', {costs['O1']:.1f}x, if you need bf16)"
        if costs["O1"] * _CLEARLY_LESS < own
        else ""
    )
    return f"{note}; use amp_level='O0' on this CPU{then}"


def warn_software_bf16(level: str, network: nn.Module, dtype: torch.dtype) -> None:
    """Warn once per process (:class:`SoftwareBf16Warning`) when ``network`` is converted to
    ``level`` in bf16 on a CPU that runs bf16 in software. The warning points at the first
    line outside jisu (the user's ``Model(...)`` or ``auto_mixed_precision(...)``), however
    deep in jisu the level was applied."""
    if _warned or dtype != torch.bfloat16:
        return
    device = next((p.device for p in network.parameters()), torch.device("cpu"))
    advice = software_bf16_advice(level, device)
    if advice is None:
        return
    _warned.append(level)
    warnings.warn(advice, SoftwareBf16Warning, stacklevel=_outside_jisu())


_JISU_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _outside_jisu() -> int:
    """``warnings.warn``'s stacklevel, called from :func:`warn_software_bf16`, of the first
    frame whose file is not in the jisu package."""
    frame, level = sys._getframe(2), 2  # 1: warn_software_bf16's own line
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_JISU_DIR):
        frame, level = frame.f_back, level + 1
    return level


def _reset() -> None:
    """Forget the cached CPU answer and the warning already given (for tests)."""
    _support.clear()
    _warned.clear()
