"""The layout of ``jisu.train``: one callback per module under ``jisu.train.callbacks``, and the
import paths users write (``jisu.train``, MindSpore's ``jisu.train.callback``). No import cycle
anywhere in ``jisu`` is checked by ``tests/test_layout.py``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import jisu.train
from jisu.train import callback, callbacks
from jisu.train.callbacks.base import Callback

TRAIN = Path(jisu.train.__file__).parent

#: MindSpore's ``mindspore.train.callback`` names that scripts import from that path
MINDSPORE_PATH = (
    "Callback",
    "RunContext",
    "LossMonitor",
    "TimeMonitor",
    "ModelCheckpoint",
    "CheckpointConfig",
    "SummaryCollector",
    "LearningRateScheduler",
    "EarlyStopping",
    "ReduceLROnPlateau",
    "History",
    "LambdaCallback",
)

BUILT_IN = [
    obj
    for obj in vars(callbacks).values()
    if inspect.isclass(obj) and issubclass(obj, Callback) and obj is not Callback
]


def test_every_built_in_callback_is_found():
    assert len(BUILT_IN) == 12


@pytest.mark.parametrize("cls", BUILT_IN, ids=lambda c: c.__name__)
def test_each_callback_has_its_own_module_and_is_exported(cls):
    module = cls.__module__
    assert module.startswith("jisu.train.callbacks.") and module != "jisu.train.callbacks.base"
    others = [c for c in BUILT_IN if c is not cls and c.__module__ == module]
    assert not others, f"{module} defines {cls.__name__} and {[c.__name__ for c in others]}"
    assert getattr(jisu.train, cls.__name__) is cls


@pytest.mark.parametrize("name", MINDSPORE_PATH)
def test_mindspores_callback_path_names_the_same_objects(name):
    assert getattr(callback, name) is getattr(callbacks, name) is getattr(jisu.train, name)
