"""The low-precision levels on a CPU without bf16 instructions: the CPU is told from its flags
(injected here, so the tests run the same on any machine), every path that applies a level
warns once with the measured cost, and ``jisu train`` picks O0 there instead of warning about
its own choice."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import jisu
import jisu.amp as amp
from jisu.amp import cpu_bf16
from jisu.amp.cpu_bf16 import SOFTWARE_BF16_COST, SoftwareBf16Warning

AVX2 = frozenset(["fpu", "sse4_2", "avx", "avx2", "fma"])  # an AVX2-only laptop
SKYLAKE = AVX2 | {"avx512f", "avx512bw", "avx512vl", "avx512dq"}  # AVX-512, no bf16
COOPER = SKYLAKE | {"avx512_bf16"}
SAPPHIRE = COOPER | {"amx_tile", "amx_bf16"}
NEOVERSE_N1 = frozenset(["fp", "asimd", "fphp", "asimdhp"])  # Arm without BF16
NEOVERSE_V1 = NEOVERSE_N1 | {"bf16", "i8mm"}


@pytest.fixture
def cpu(monkeypatch):
    """Call with a flag set (or None: no /proc/cpuinfo) to make it this process's CPU."""
    for name in ("JISU_CPU_BF16", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(name, raising=False)

    def use(flags):
        monkeypatch.setattr(cpu_bf16, "_cpu_flags", lambda: flags)
        cpu_bf16._reset()

    yield use
    cpu_bf16._reset()


def small_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(64, 2))


def software_warnings(build) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build()
    return [w for w in caught if issubclass(w.category, SoftwareBf16Warning)]


@pytest.mark.parametrize(
    ("flags", "support", "kind"),
    [
        (AVX2, "software", "other"),
        (SKYLAKE, "software", "avx512"),
        (COOPER, "avx512_bf16", "avx512"),
        (SAPPHIRE, "amx_bf16", "avx512"),
        (NEOVERSE_N1, "software", "other"),
        (NEOVERSE_V1, "bf16", "other"),
        (None, None, "other"),  # no /proc/cpuinfo (macOS, Windows): unknown, nothing said
    ],
)
def test_the_cpu_is_told_from_its_flags(cpu, flags, support, kind):
    cpu(flags)
    assert cpu_bf16.cpu_bf16_support() == support
    assert cpu_bf16._software_kind() == kind


def test_a_onednn_cap_below_bf16_counts_as_software(cpu, monkeypatch):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    cpu(SAPPHIRE)
    assert cpu_bf16.cpu_bf16_support() == "software" and cpu_bf16._software_kind() == "other"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE")
    cpu(SAPPHIRE)
    assert cpu_bf16.cpu_bf16_support() == "software" and cpu_bf16._software_kind() == "avx512"
    assert "oneDNN capped at AVX512_CORE" in cpu_bf16.software_bf16_note("O2")
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_AMX")
    cpu(SAPPHIRE)
    assert cpu_bf16.cpu_bf16_support() == "amx_bf16"


def test_the_environment_overrides_the_flags(cpu, monkeypatch):
    cpu(SAPPHIRE)
    monkeypatch.setenv("JISU_CPU_BF16", "0")
    assert cpu_bf16.cpu_bf16_support() == "software"
    assert "(JISU_CPU_BF16=0)" in cpu_bf16.software_bf16_note("O3")
    cpu(AVX2)
    monkeypatch.setenv("JISU_CPU_BF16", "1")
    assert cpu_bf16.software_bf16_advice("O2") is None


@pytest.mark.parametrize(("flags", "kind"), [(AVX2, "other"), (SKYLAKE, "avx512")])
def test_the_advice_gives_the_measured_cost_and_what_to_use(cpu, flags, kind):
    cpu(flags)
    costs = SOFTWARE_BF16_COST[kind]
    for level in ("O1", "O2", "O3"):
        advice = cpu_bf16.software_bf16_advice(level)
        assert f"amp_level='{level}' on this CPU runs bf16 in software" in advice
        assert f"took {costs[level]:.1f}x the time of O0" in advice
        assert "benchmarks/amp_cpu.py" in advice and "use amp_level='O0' on this CPU" in advice
        assert ("or amp_level='O1'" in advice) == (costs["O1"] * 1.1 < costs[level])
    assert cpu_bf16.software_bf16_advice("auto") == cpu_bf16.software_bf16_advice("O1").replace(
        "amp_level='O1' on", "amp_level='auto' on"
    )
    assert cpu_bf16.software_bf16_advice("O0") is None
    assert cpu_bf16.software_bf16_advice("O2", "cuda:0") is None  # fp16 there, in hardware


def test_the_recorded_costs_are_slowdowns():
    for costs in SOFTWARE_BF16_COST.values():
        assert set(costs) == {"O1", "O2", "O3"} and all(c > 1 for c in costs.values())


def test_o1_is_offered_only_where_it_is_clearly_cheaper(cpu, monkeypatch):
    cpu(AVX2)
    monkeypatch.setitem(SOFTWARE_BF16_COST, "other", {"O1": 2.0, "O2": 4.0, "O3": 2.1})
    assert cpu_bf16.software_bf16_advice("O2").endswith(
        "use amp_level='O0' on this CPU (or amp_level='O1', 2.0x, if you need bf16)"
    )
    assert cpu_bf16.software_bf16_advice("O3").endswith("use amp_level='O0' on this CPU")
    assert cpu_bf16.software_bf16_advice("O1").endswith("use amp_level='O0' on this CPU")


@pytest.mark.parametrize(
    "build",
    [
        lambda net: amp.auto_mixed_precision(net, "O2"),
        lambda net: amp.precision_for("O3", net),
        lambda net: amp.build_train_network(
            net, torch.optim.SGD(net.parameters(), lr=0.1), nn.MSELoss(), level="O1"
        ),
        lambda net: jisu.Model(
            net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), amp_level="O2"
        ),
        lambda net: jisu.Model(net, amp_level="auto"),  # predict only
    ],
    ids=["auto_mixed_precision", "precision_for", "build_train_network", "Model", "predict"],
)
def test_every_path_that_applies_a_level_warns_once(cpu, build):
    cpu(AVX2)
    first = software_warnings(lambda: build(small_net()))
    assert len(first) == 1
    assert "runs bf16 in software" in str(first[0].message)
    assert first[0].filename == __file__  # the user's line, not jisu's
    assert software_warnings(lambda: build(small_net())) == []  # once per process
    assert software_warnings(lambda: amp.auto_mixed_precision(small_net(), "O3")) == []


def test_no_warning_at_o0_in_hardware_bf16_or_in_fp16(cpu):
    cpu(AVX2)
    assert software_warnings(lambda: amp.auto_mixed_precision(small_net(), "O0")) == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        amp.auto_mixed_precision(small_net(), "O2", dtype=torch.float16)
    assert ["float16 on CPU is very slow" in str(w.message) for w in caught] == [True]
    cpu(SAPPHIRE)
    assert software_warnings(lambda: amp.auto_mixed_precision(small_net(), "O2")) == []
    cpu(None)
    assert software_warnings(lambda: amp.auto_mixed_precision(small_net(), "O2")) == []


def test_the_main_job_measures_its_level_and_keeps_an_explicit_one(monkeypatch):
    """``jisu train`` without --amp-level: "fastest", measured (jisu.train.amp_choice), so it
    never runs bf16 in software where that is slower; an explicit level is kept."""
    from jisu import cli, job

    chosen = []

    def fake_run(cfg):
        chosen.append(cfg.amp_level)
        raise KeyboardInterrupt  # stop before training: the choice is what is checked

    monkeypatch.setattr(job, "run", fake_run)
    cli.main(["train"])
    cli.main(["train", "--amp-level", "O3"])
    assert chosen == ["fastest", "O3"]


def test_a_measured_level_gives_no_software_bf16_warning(cpu, monkeypatch):
    """The trials of ``amp_level="fastest"`` and the level they chose (here O2, made the
    fastest by a fake clock) do not warn with the fixed figures: they were measured here."""
    import functools

    from jisu.train import model as model_module
    from jisu.train.amp_choice import choose_for

    cpu(AVX2)
    clock = [0.0]

    class Costed(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            clock[0] += 0.001 if self.fc.weight.dtype == torch.bfloat16 else 0.01
            return self.fc(x)

    monkeypatch.setattr(
        model_module, "choose_for", functools.partial(choose_for, clock=lambda: clock[0])
    )
    net = Costed()
    model = jisu.Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1),
                       amp_level="fastest")  # fmt: skip
    batches = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(4)]
    assert software_warnings(lambda: model.train(1, batches)) == []
    assert model.amp_level == "O2"
