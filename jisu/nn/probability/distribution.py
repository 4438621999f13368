"""MindSpore's ``nn.probability.distribution``: ``Normal``, ``Uniform``, ``Bernoulli`` and
``Categorical`` as cells over ``torch.distributions``, with MindSpore's calls: the parameters
given at construction or per call (``dist.prob(x, mean, sd)``), ``sample(shape, *params)``,
``prob``/``log_prob``/``cdf``/``log_cdf``/``survival_function``/``log_survival``, ``mean``/
``mode``/``sd``/``var``/``entropy``, ``kl_loss``/``cross_entropy`` against another of the same
kind, and ``dist("prob", x)`` (MindSpore's ``construct`` by method name).

Samples come from torch's generator (``seed`` is recorded; seed torch to repeat a draw).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import distributions as td

from ..cell import Cell

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "Uniform"]

_METHODS = (
    "prob", "log_prob", "cdf", "log_cdf", "survival_function", "log_survival", "mean", "mode",
    "sd", "var", "entropy", "kl_loss", "cross_entropy", "sample",
)  # fmt: skip


def _tensor(value: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor | None:
    if value is None:
        return None
    return value.to(dtype) if isinstance(value, torch.Tensor) else torch.tensor(value, dtype=dtype)


class Distribution(Cell):
    """Base of the distributions: ``_params`` names the parameters (given at construction or
    per call), ``_make`` builds the torch distribution of them."""

    _params: tuple[str, ...] = ()

    def __init__(self, seed: int | None, dtype: torch.dtype, name: str, **params: Any) -> None:
        super().__init__()
        self.seed, self.dtype, self.name = seed, dtype, name
        self._values = {k: _tensor(v) for k, v in params.items()}

    @property
    def parameters_of(self) -> dict[str, torch.Tensor | None]:
        """The parameters given at construction (None where each call must give them)."""
        return dict(self._values)

    def _resolve(self, given: tuple[Any, ...]) -> list[torch.Tensor]:
        out = []
        for i, key in enumerate(self._params):
            value = _tensor(given[i]) if i < len(given) and given[i] is not None else None
            value = self._values[key] if value is None else value
            if value is None:
                raise ValueError(f"{self.name}: {key} must be given, here or at construction")
            out.append(value)
        return out

    def _make(self, *params: torch.Tensor) -> td.Distribution:
        raise NotImplementedError

    def _dist(self, given: tuple[Any, ...]) -> td.Distribution:
        return self._make(*self._resolve(given))

    def _value(self, value: Any) -> torch.Tensor:
        return _tensor(value)

    def prob(self, value: Any, *params: Any) -> torch.Tensor:
        return self.log_prob(value, *params).exp()

    def log_prob(self, value: Any, *params: Any) -> torch.Tensor:
        return self._dist(params).log_prob(self._value(value))

    def cdf(self, value: Any, *params: Any) -> torch.Tensor:
        return self._dist(params).cdf(self._value(value))

    def log_cdf(self, value: Any, *params: Any) -> torch.Tensor:
        return self.cdf(value, *params).log()

    def survival_function(self, value: Any, *params: Any) -> torch.Tensor:
        return 1.0 - self.cdf(value, *params)

    def log_survival(self, value: Any, *params: Any) -> torch.Tensor:
        return self.survival_function(value, *params).log()

    def mean(self, *params: Any) -> torch.Tensor:
        return self._dist(params).mean

    def mode(self, *params: Any) -> torch.Tensor:
        return self._dist(params).mode

    def sd(self, *params: Any) -> torch.Tensor:
        return self._dist(params).stddev

    def var(self, *params: Any) -> torch.Tensor:
        return self._dist(params).variance

    def entropy(self, *params: Any) -> torch.Tensor:
        return self._dist(params).entropy()

    def kl_loss(self, dist: str, *params: Any) -> torch.Tensor:
        """KL(this ‖ other): ``params`` are the other's parameters, then (optionally) this
        one's; ``dist`` names the other's kind (it must be this kind)."""
        if dist != type(self).__name__:
            raise ValueError(f"{self.name}: kl_loss against {dist!r} is not supported")
        n = len(self._params)
        other = self._make(*[_tensor(p) for p in params[:n]])
        return td.kl_divergence(self._dist(params[n:]), other)

    def cross_entropy(self, dist: str, *params: Any) -> torch.Tensor:
        """H(this, other) = entropy(this) + KL(this ‖ other)."""
        n = len(self._params)
        return self.entropy(*params[n:]) + self.kl_loss(dist, *params)

    def sample(self, shape: tuple[int, ...] = (), *params: Any) -> torch.Tensor:
        return self._dist(params).sample(tuple(shape)).to(self.dtype)

    def construct(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if name not in _METHODS:
            raise ValueError(f"{self.name}: unknown method {name!r}. Known: {list(_METHODS)}")
        return getattr(self, name)(*args, **kwargs)


class Normal(Distribution):
    """The normal distribution N(mean, sd²). Default dtype float32."""

    _params = ("mean", "sd")

    def __init__(
        self,
        mean: Any = None,
        sd: Any = None,
        seed: int | None = None,
        dtype: torch.dtype = torch.float32,
        name: str = "Normal",
    ) -> None:
        super().__init__(seed, dtype, name, mean=mean, sd=sd)

    def _make(self, mean: torch.Tensor, sd: torch.Tensor) -> td.Distribution:
        return td.Normal(mean, sd, validate_args=False)


class Uniform(Distribution):
    """The uniform distribution on [low, high). Default dtype float32."""

    _params = ("low", "high")

    def __init__(
        self,
        low: Any = None,
        high: Any = None,
        seed: int | None = None,
        dtype: torch.dtype = torch.float32,
        name: str = "Uniform",
    ) -> None:
        super().__init__(seed, dtype, name, low=low, high=high)

    def _make(self, low: torch.Tensor, high: torch.Tensor) -> td.Distribution:
        return td.Uniform(low, high, validate_args=False)

    def mode(self, *params: Any) -> torch.Tensor:
        raise ValueError(f"{self.name}: a uniform distribution has no mode")


class Bernoulli(Distribution):
    """1 with probability ``probs``, else 0. Default dtype int32 (the samples')."""

    _params = ("probs",)

    def __init__(
        self,
        probs: Any = None,
        seed: int | None = None,
        dtype: torch.dtype = torch.int32,
        name: str = "Bernoulli",
    ) -> None:
        super().__init__(seed, dtype, name, probs=probs)

    def _make(self, probs: torch.Tensor) -> td.Distribution:
        return td.Bernoulli(probs=probs, validate_args=False)


class Categorical(Distribution):
    """A class index drawn with the probabilities ``probs`` (the last axis). Default dtype
    int32; ``mean()`` is ``Σ i·p_i`` and ``mode()`` the most likely class, as MindSpore's."""

    _params = ("probs",)

    def __init__(
        self,
        probs: Any = None,
        seed: int | None = None,
        dtype: torch.dtype = torch.int32,
        name: str = "Categorical",
    ) -> None:
        super().__init__(seed, dtype, name, probs=probs)

    @property
    def probs(self) -> torch.Tensor | None:
        return self._values["probs"]

    def _make(self, probs: torch.Tensor) -> td.Distribution:
        return td.Categorical(probs=probs, validate_args=False)

    def _value(self, value: Any) -> torch.Tensor:
        return _tensor(value, torch.int64)

    def mean(self, *params: Any) -> torch.Tensor:
        (probs,) = self._resolve(params)
        probs = probs / probs.sum(-1, keepdim=True)
        return (probs * torch.arange(probs.shape[-1], dtype=probs.dtype)).sum(-1)

    def mode(self, *params: Any) -> torch.Tensor:
        (probs,) = self._resolve(params)
        return probs.argmax(-1).to(self.dtype)

    def var(self, *params: Any) -> torch.Tensor:
        (probs,) = self._resolve(params)
        probs = probs / probs.sum(-1, keepdim=True)
        index = torch.arange(probs.shape[-1], dtype=probs.dtype)
        mean = (probs * index).sum(-1, keepdim=True)
        return (probs * (index - mean) ** 2).sum(-1)

    def sd(self, *params: Any) -> torch.Tensor:
        return self.var(*params).sqrt()

    def cdf(self, value: Any, *params: Any) -> torch.Tensor:
        (probs,) = self._resolve(params)
        cumulative = (probs / probs.sum(-1, keepdim=True)).cumsum(-1)
        index = self._value(value).clamp(-1, probs.shape[-1] - 1)
        below = cumulative.expand(*index.shape, -1) if cumulative.dim() == 1 else cumulative
        out = below.gather(-1, index.clamp_min(0).unsqueeze(-1)).squeeze(-1)
        return torch.where(index < 0, 0.0, out)
