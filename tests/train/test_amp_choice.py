"""``amp_level="fastest"``: the level chosen by timing train steps. Times are injected: the
networks below advance a fake clock in their forward by a cost that depends on the precision
they run at, so the verdicts hold on any machine."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import jisu.dataset as ds
from jisu.train import model as model_module
from jisu.train.amp_choice import (
    CANDIDATES,
    MARGIN,
    LevelTrial,
    choose_for,
    choose_level,
    measure_levels,
)
from jisu.train.callback import Callback
from jisu.train.model import Model


class FakeClock:
    """Seconds that only the networks' forwards advance; shared by every copy of a network."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def __deepcopy__(self, memo: dict) -> FakeClock:
        return self


def running_level(module: nn.Linear) -> str:
    """The level a forward runs at, seen from inside: autocast (O1), bf16 weights (O2), or
    neither (O0)."""
    if torch.is_autocast_enabled("cpu"):
        return "O1"
    return "O2" if module.weight.dtype == torch.bfloat16 else "O0"


class CostedNet(nn.Module):
    """A small classifier whose forward costs ``costs[level]`` fake seconds, and gives NaN at
    the levels in ``nan_at``; dropout draws from torch's global generator."""

    def __init__(self, clock: FakeClock, costs: dict[str, float], nan_at: tuple = ()) -> None:
        super().__init__()
        self.clock, self.costs, self.nan_at = clock, costs, nan_at
        self.hidden = nn.Linear(6, 16)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        level = running_level(self.hidden)
        self.clock.now += self.costs[level]
        y = self.out(self.drop(torch.relu(self.hidden(x))))
        return y * float("nan") if level in self.nan_at else y


def data(rows: int = 96, batch: int = 16) -> ds.Dataset:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, 6)).astype(np.float32)
    y = rng.integers(0, 3, rows).astype(np.int64)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch)


def model_at(level: str, clock: FakeClock, costs: dict[str, float], **kw) -> Model:
    torch.manual_seed(0)
    net = CostedNet(clock, costs, **kw)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    return Model(net, nn.CrossEntropyLoss(), opt, amp_level=level)


# ------------------------------------------------------------------ the rule
trial_lists = st.lists(
    st.one_of(
        st.floats(1e-4, 10.0).map(lambda s: ("t", s)),
        st.just(("f", "loss not finite at step 1")),
    ),
    min_size=1,
    max_size=4,
)


@given(trial_lists, st.floats(0.0, 0.5))
def test_the_rule_takes_a_less_precise_level_only_when_clearly_faster(raw, margin):
    trials = [
        LevelTrial(f"L{i}", seconds=v) if kind == "t" else LevelTrial(f"L{i}", failure=v)
        for i, (kind, v) in enumerate(raw)
    ]
    choice = choose_level(trials, margin)
    timed = [t for t in trials if t.seconds is not None]
    if not timed:  # nothing ran: the most precise level, and the failures said
        assert choice.level == "L0" and "no level ran" in choice.reason
        return
    bar = min(t.seconds for t in timed) * (1 + margin)
    position = [t.level for t in trials].index(choice.level)
    chosen = trials[position]
    assert chosen.seconds is not None and chosen.seconds <= bar
    # every more precise level failed or was clearly slower than the fastest
    assert all(t.seconds is None or t.seconds > bar for t in trials[:position])


def test_the_rule_on_figures():
    def trials(o0, o1, o2):
        return [LevelTrial("O0", o0), LevelTrial("O1", o1), LevelTrial("O2", o2)]

    assert choose_level(trials(0.020, 0.022, 0.015)).level == "O2"
    within = choose_level(trials(0.0200, 0.0220, 0.0200 / (1 + MARGIN / 2)))
    assert within.level == "O0"
    assert "O2 is within 5%, so the more precise O0" in within.reason
    failed = [LevelTrial("O0", 0.02), LevelTrial("O1", failure="loss not finite at step 2")]
    assert choose_level(failed).level == "O0"
    assert choose_level(failed).describe() == (
        "amp fastest: O0 (per train step: O0 20.0 ms, O1 loss not finite at step 2)"
    )
    with pytest.raises(ValueError, match="no trial"):
        choose_level([])


# ------------------------------------------------------------------ the measurement
def batches_of(dataset: ds.Dataset, count: int = 4) -> list[list[torch.Tensor]]:
    return [[torch.as_tensor(c) for c in row] for row in dataset.create_tuple_iterator()][:count]


def test_each_level_is_timed_by_its_own_steps():
    clock = FakeClock()
    costs = {"O0": 0.030, "O1": 0.020, "O2": 0.010}
    model = model_at("O0", clock, costs)
    trials = measure_levels(model, batches_of(data()), CANDIDATES, steps=3, rounds=2, clock=clock)
    # the clock moves only in the forward passes: each median is exactly its level's cost
    assert [(t.level, t.seconds) for t in trials] == [
        (k, pytest.approx(v)) for k, v in costs.items()
    ]


def test_a_level_whose_loss_is_not_finite_is_not_chosen():
    clock = FakeClock()
    costs = {"O0": 0.030, "O1": 0.020, "O2": 0.010}
    model = model_at("O0", clock, costs, nan_at=("O2",))
    trials = measure_levels(model, batches_of(data()), clock=clock)
    assert trials[2] == LevelTrial("O2", failure="loss not finite at step 1")
    assert choose_level(trials).level == "O1"


def test_unknown_levels_are_refused_first():
    model = model_at("O0", FakeClock(), {"O0": 0.0, "O1": 0.0, "O2": 0.0})
    with pytest.raises(ValueError, match="measure_levels: levels must be one of"):
        measure_levels(model, [], ["O0", "O5"])


# ------------------------------------------------------------------ Model(amp_level="fastest")
def test_model_trains_at_the_chosen_level_as_if_built_there(monkeypatch):
    """The trials leave no trace: the weights after training are those of a Model built at
    the chosen level from the start (same data order, same dropout draws)."""
    clock = FakeClock()
    costs = {"O0": 0.030, "O1": 0.025, "O2": 0.010}
    monkeypatch.setattr(model_module, "choose_for", functools.partial(choose_for, clock=clock))
    fastest = model_at("fastest", clock, costs)
    assert fastest.amp_level == "fastest" and fastest.amp_choice is None
    torch.manual_seed(7)
    fastest.train(2, data())
    assert fastest.amp_level == "O2" and fastest.amp_choice.level == "O2"
    assert fastest.train_network.precision.level == "O2"
    assert fastest.predict_network is fastest.eval_network is fastest.train_network.network

    direct = model_at("O2", FakeClock(), costs)
    torch.manual_seed(7)
    direct.train(2, data())
    for (name, a), b in zip(
        fastest.network.state_dict().items(), direct.network.state_dict().values()
    ):
        assert torch.equal(a, b), name


def test_model_keeps_o0_when_the_gain_is_noise(monkeypatch):
    clock = FakeClock()
    costs = {"O0": 0.0100, "O1": 0.0120, "O2": 0.0098}
    monkeypatch.setattr(model_module, "choose_for", functools.partial(choose_for, clock=clock))
    model = model_at("fastest", clock, costs)
    model.train(1, data())
    assert model.amp_level == "O0"
    assert (
        not hasattr(model.train_network, "precision") or model.train_network.precision.level == "O0"
    )


def test_a_one_shot_iterator_is_not_measured_and_loses_no_batch():
    batches = batches_of(data(), count=6)
    seen = []

    class Count(Callback):
        def on_train_step_end(self, run_context):
            seen.append(run_context.original_args().cur_step_num)

    model = model_at("fastest", FakeClock(), {"O0": 0.0, "O1": 0.0, "O2": 0.0})
    model.train(1, iter([tuple(b) for b in batches]), callbacks=[Count()])
    assert model.amp_level == "O0" and "not measured" in model.amp_choice.reason
    assert seen == list(range(1, 7))


def test_fastest_needs_an_optimizer_and_an_unknown_level_names_the_choices():
    with pytest.raises(ValueError, match="amp_level='fastest' needs an optimizer"):
        Model(nn.Linear(2, 2), amp_level="fastest")
    net = nn.Linear(2, 2)
    with pytest.raises(ValueError, match=r"Model: amp_level must be one of .*'fastest'\). Rec"):
        Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1), amp_level="O5")


def test_reading_a_shuffled_dataloaders_first_batches_leaves_the_runs_order_alone(monkeypatch):
    """A DataLoader draws its shuffle from torch's generator when iterated: the trials'
    read of its first batches must not change the order the run then sees."""
    from torch.utils.data import DataLoader, TensorDataset

    clock = FakeClock()
    costs = {"O0": 0.01, "O1": 0.02, "O2": 0.03}  # O0 is chosen: compared with a plain O0 run
    monkeypatch.setattr(model_module, "choose_for", functools.partial(choose_for, clock=clock))
    rng = np.random.default_rng(3)
    x = torch.as_tensor(rng.standard_normal((64, 6)), dtype=torch.float32)
    y = torch.as_tensor(rng.integers(0, 3, 64))
    weights = []
    for level in ("fastest", "O0"):
        model = model_at(level, clock, costs)
        torch.manual_seed(11)
        model.train(1, DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True))
        assert model.amp_level == "O0"
        weights.append([p.detach().clone() for p in model.network.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*weights))
