"""MindSpore 2.0's ``parallel._transformer.op_parallel_config``: the data/model/expert-parallel
degrees its transformer layers take. jisu runs them on one device (or data-parallel under
``torch.distributed``), so these are validated records: the degrees are kept and read back,
and change nothing in how the layers compute."""

from __future__ import annotations

from typing import Any

from ... import _checkparam as Validator

__all__ = [
    "MoEParallelConfig",
    "OpParallelConfig",
    "_Config",
    "_PipeLineConfig",
    "_check_config",
    "default_dpmp_config",
    "default_moeparallel_config",
]


def positive_int_property(name: str) -> property:
    """A property stored as ``_<name>`` that accepts positive ints only (``TypeError`` for
    another type, ``ValueError`` for a value <= 0, as MindSpore's)."""

    def get(self: Any) -> int:
        return getattr(self, f"_{name}")

    def put(self: Any, value: int) -> None:
        Validator.check_positive_int(value, name)
        setattr(self, f"_{name}", value)

    return property(get, put)


def bool_property(name: str) -> property:
    """A property stored as ``_<name>`` that accepts bools only."""

    def get(self: Any) -> bool:
        return getattr(self, f"_{name}")

    def put(self: Any, value: bool) -> None:
        Validator.check_bool(value, name)
        setattr(self, f"_{name}", value)

    return property(get, put)


def delegated_property(owner: str, name: str, *also: str) -> property:
    """A property read from ``self.<owner>.<name>`` and written there (and to the ``also``
    owners), so nested configs agree."""

    def get(self: Any) -> Any:
        return getattr(getattr(self, owner), name)

    def put(self: Any, value: Any) -> None:
        for target in (owner, *also):
            setattr(getattr(self, target), name, value)

    return property(get, put)


class _Config:
    """The base of the configs: ``str()`` lists the settings."""

    def __str__(self) -> str:
        return "[ParallelConfig]\n" + "".join(f"{k}:{v}\n" for k, v in self.__dict__.items())


class OpParallelConfig(_Config):
    """``data_parallel`` and ``model_parallel`` degrees (positive ints, default 1)."""

    data_parallel = positive_int_property("data_parallel")
    model_parallel = positive_int_property("model_parallel")

    def __init__(self, data_parallel: int = 1, model_parallel: int = 1) -> None:
        self.data_parallel = data_parallel
        self.model_parallel = model_parallel


class MoEParallelConfig(_Config):
    """``data_parallel``, ``model_parallel`` (kept in ``dpmp``, an :class:`OpParallelConfig`)
    and ``expert_parallel``."""

    data_parallel = delegated_property("_dpmp", "data_parallel")
    model_parallel = delegated_property("_dpmp", "model_parallel")
    expert_parallel = positive_int_property("expert_parallel")

    def __init__(self, data_parallel: int = 1, model_parallel: int = 1,
                 expert_parallel: int = 1) -> None:  # fmt: skip
        Validator.check_positive_int(expert_parallel, "expert_parallel")
        self._dpmp = OpParallelConfig(data_parallel=data_parallel, model_parallel=model_parallel)
        self.expert_parallel = expert_parallel

    @property
    def dpmp(self) -> OpParallelConfig:
        """The data/model-parallel part."""
        return self._dpmp


class _PipeLineConfig(_Config):
    """``pipeline_stage`` and ``micro_batch_num`` (positive ints)."""

    pipeline_stage = positive_int_property("pipeline_stage")
    micro_batch_num = positive_int_property("micro_batch_num")

    def __init__(self, pipeline_stage: int = 1, micro_batch_num: int = 1) -> None:
        self.pipeline_stage = pipeline_stage
        self.micro_batch_num = micro_batch_num


default_dpmp_config = OpParallelConfig()
default_moeparallel_config = MoEParallelConfig()


def _check_config(config: Any) -> None:
    """MindSpore checks the degrees against its auto-parallel context; on one device (or
    data-parallel) there is nothing they must fit, so any validated config passes."""
    if not isinstance(config, _Config):
        raise TypeError(f"_check_config: a parallel config is expected. Received: {config!r}")
