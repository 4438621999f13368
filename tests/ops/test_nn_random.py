"""jisu's random primitives and functions: MindSpore's shapes and dtypes are checked in
test_nn_primitives.py against recorded answers; here, their distributions (mean, variance,
range, counts within statistical bounds at a fixed seed) and determinism from (seed, seed2,
jisu's global seed)."""

from __future__ import annotations

import math

import pytest
import torch

import jisu
import jisu.ops as ops
from jisu.ops import operations as P

N = 20000


def _mean_ok(values: torch.Tensor, mean: float, std: float) -> None:
    """The sample mean lies within 5 standard errors of ``mean``."""
    err = std / math.sqrt(values.numel())
    assert abs(values.double().mean().item() - mean) < 5 * err


def _counts_ok(values: torch.Tensor, probs: list[float]) -> None:
    """Category counts pass a chi-square test (a bound far in the tail, so the seeded test is
    not flaky and a wrong distribution still fails)."""
    counts = torch.bincount(values.reshape(-1).long(), minlength=len(probs)).double()
    n = counts.sum()
    expected = torch.tensor(probs, dtype=torch.float64) * n
    chi2 = ((counts - expected) ** 2 / expected).sum().item()
    assert chi2 < 3 * len(probs) + 30, counts


def test_uniform_real_distribution_and_range() -> None:
    x = P.UniformReal(seed=3)((N,))
    assert x.dtype == torch.float32 and x.shape == (N,)
    assert x.min().item() >= 0 and x.max().item() < 1
    _mean_ok(x, 0.5, math.sqrt(1 / 12))
    assert abs(x.var().item() - 1 / 12) < 0.005


def test_seeded_primitive_repeats_across_instances_and_advances_between_calls() -> None:
    a, b = P.UniformReal(seed=3, seed2=4), P.UniformReal(seed=3, seed2=4)
    first = a((5,))
    assert torch.equal(first, b((5,)))
    assert not torch.equal(first, a((5,)))  # the stream moves on, as MindSpore's does
    assert not torch.equal(first, P.UniformReal(seed=3, seed2=5)((5,)))


def test_global_seed_sets_both_unseeded_and_seeded_streams() -> None:
    jisu.set_seed(7)
    unseeded, seeded = P.StandardNormal()((4,)), P.StandardNormal(seed=1)((4,))
    jisu.set_seed(7)
    assert torch.equal(unseeded, P.StandardNormal()((4,)))
    assert torch.equal(seeded, P.StandardNormal(seed=1)((4,)))
    jisu.set_seed(8)
    assert not torch.equal(seeded, P.StandardNormal(seed=1)((4,)))
    op = P.StandardNormal(seed=1)
    jisu.set_seed(7)
    first = op((4,))
    jisu.set_seed(8)
    op((4,))
    jisu.set_seed(7)  # a new global seed restarts a primitive's stream
    assert torch.equal(op((4,)), first)


def test_standard_normal_moments() -> None:
    x = P.StandardNormal(seed=1, seed2=2)((N,))
    _mean_ok(x, 0.0, 1.0)
    assert abs(x.std().item() - 1) < 0.03


def test_uniform_int_range_and_counts() -> None:
    low, high = torch.tensor(2, dtype=torch.int32), torch.tensor(9, dtype=torch.int32)
    x = P.UniformInt(seed=3)((N,), low, high)
    assert x.dtype == torch.int32
    assert x.min().item() == 2 and x.max().item() == 8
    _counts_ok(x - 2, [1 / 7] * 7)


def test_uniform_int_rejects_empty_range_and_non_int32_bounds() -> None:
    one = torch.tensor(1, dtype=torch.int32)
    with pytest.raises(ValueError, match="minval must be < maxval"):
        P.UniformInt()((2,), one, one)
    with pytest.raises(TypeError, match="int32"):
        P.UniformInt()((2,), torch.tensor(1.0), one)


def test_seeds_must_be_non_negative_ints() -> None:
    with pytest.raises(ValueError, match="seed2 must be >= 0"):
        P.UniformReal(seed=1, seed2=-1)
    with pytest.raises(TypeError, match="seed must be an int"):
        P.StandardNormal(seed=1.5)


def test_random_choice_with_mask_picks_true_positions_uniformly() -> None:
    x = torch.tensor([[True, False, True], [False, True, True]])
    op = P.RandomChoiceWithMask(count=6, seed=2)
    index, mask = op(x)
    assert index.dtype == torch.int32 and mask.dtype == torch.bool
    assert mask.tolist() == [True] * 4 + [False] * 2
    assert sorted(map(tuple, index[:4].tolist())) == [(0, 0), (0, 2), (1, 1), (1, 2)]
    assert index[4:].eq(0).all()
    # choosing 1 of the 4: each True position about equally often
    one = P.RandomChoiceWithMask(count=1, seed=5)
    picks = [tuple(one(x)[0][0].tolist()) for _ in range(800)]
    order = [(0, 0), (0, 2), (1, 1), (1, 2)]
    _counts_ok(torch.tensor([order.index(p) for p in picks]), [0.25] * 4)


def test_random_choice_with_mask_needs_bool_input() -> None:
    with pytest.raises(TypeError, match="bool"):
        P.RandomChoiceWithMask()(torch.ones(3))


def test_multinomial_frequencies_follow_the_probabilities() -> None:
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4], [2.0, 0.0, 0.0, 2.0]])  # rows unnormalized
    out = P.Multinomial(seed=5)(probs, 5000)
    assert out.dtype == torch.int32 and out.shape == (2, 5000)
    _counts_ok(out[0], [0.1, 0.2, 0.3, 0.4])
    assert set(out[1].tolist()) == {0, 3}
    assert ops.multinomial(probs[0], 10, seed=1).dtype == torch.int32


def test_dropout_keeps_about_keep_prob_and_scales() -> None:
    x = torch.ones(N)
    out, mask = P.Dropout(keep_prob=0.7, Seed0=1)(x)
    assert mask.dtype == torch.float32
    _mean_ok(mask, 0.7, math.sqrt(0.7 * 0.3))
    torch.testing.assert_close(out, x * mask / 0.7)


def test_dropout_gen_mask_and_do_mask_work_together() -> None:
    keep = torch.tensor(0.6)
    mask = P.DropoutGenMask(Seed0=1)((4, 1000), keep)
    assert mask.dtype == torch.uint8 and mask.shape == (math.ceil(4000 / 128) * 16,)
    x = torch.full((4, 1000), 3.0)
    out = P.DropoutDoMask()(x, mask, keep)
    kept = out != 0
    _mean_ok(kept.float(), 0.6, math.sqrt(0.6 * 0.4))
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 3.0 / 0.6))


def test_uniform_function_floats_ints_and_broadcast() -> None:
    x = ops.uniform((N,), torch.tensor(1.0), torch.tensor(3.0), seed=5)
    assert x.dtype == torch.float32 and x.min().item() >= 1 and x.max().item() < 3
    _mean_ok(x, 2.0, 2 / math.sqrt(12))
    i = ops.uniform(
        (N,),
        torch.tensor(1, dtype=torch.int32),
        torch.tensor(4, dtype=torch.int32),
        dtype=torch.int32,
    )
    assert i.dtype == torch.int32
    _counts_ok(i - 1, [1 / 3] * 3)
    wide = ops.uniform((2, 1), torch.zeros(3), torch.ones(3))
    assert wide.shape == (2, 3)


def test_normal_function_moments_and_broadcast() -> None:
    x = ops.normal((N,), torch.tensor(1.0), torch.tensor(2.0), seed=3)
    _mean_ok(x, 1.0, 2.0)
    assert abs(x.std().item() - 2) < 0.06
    assert ops.normal((4, 1), torch.zeros(3), torch.ones(3)).shape == (4, 3)


def test_randn_and_standard_normal_functions() -> None:
    assert ops.randn(2, 3).shape == (2, 3) and ops.randn((2, 3)).dtype == torch.float32
    assert ops.randn(4, dtype=torch.float64).dtype == torch.float64
    x = ops.standard_normal((N,), seed=2)
    _mean_ok(x, 0.0, 1.0)


def test_seeded_functions_differ_between_calls() -> None:
    a = ops.standard_normal((4,), seed=11)
    b = ops.standard_normal((4,), seed=11)
    assert not torch.equal(a, b)  # MindSpore's op-seed table moves on per call


def test_dropout_function() -> None:
    x = torch.ones(N)
    out = ops.dropout(x, p=0.3, seed=1)
    _mean_ok((out != 0).float(), 0.7, math.sqrt(0.21))
    torch.testing.assert_close(out[out != 0], torch.full_like(out[out != 0], 1 / 0.7))
    assert ops.dropout(x, p=0.3, training=False) is x


def test_rand_randint_and_like_functions() -> None:
    x = ops.rand(N, seed=4)
    assert x.dtype == torch.float32
    _mean_ok(x, 0.5, math.sqrt(1 / 12))
    i = ops.randint(2, 7, (N,))
    assert i.dtype == torch.int64 and i.min().item() == 2 and i.max().item() == 6
    _counts_ok(i - 2, [0.2] * 5)
    like = torch.zeros(3, 4, dtype=torch.float64)
    assert ops.rand_like(like).dtype == torch.float64
    assert ops.randn_like(like, dtype=torch.float32).dtype == torch.float32
    ints = ops.randint_like(torch.zeros(N, dtype=torch.int32), 0, 3)
    assert ints.dtype == torch.int32
    _counts_ok(ints, [1 / 3] * 3)
    with pytest.raises(ValueError, match="int type"):
        ops.randint_like(like, 0, 3)


def test_bernoulli_draws_with_probability_p_in_the_input_dtype() -> None:
    out = ops.bernoulli(torch.zeros(N, dtype=torch.float16), p=0.3, seed=2)
    assert out.dtype == torch.float16 and set(out.unique().tolist()) <= {0.0, 1.0}
    _mean_ok(out.float(), 0.3, math.sqrt(0.21))
    per_element = ops.bernoulli(torch.zeros(2, N), p=torch.tensor([[0.0], [1.0]]))
    assert per_element[0].eq(0).all() and per_element[1].eq(1).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_random_ops_draw_on_the_input_device() -> None:
    x = torch.ones(8, device="cuda")
    assert P.Dropout(keep_prob=0.5, Seed0=1)(x)[0].device == x.device
    assert ops.dropout(x, seed=1).device == x.device
    assert P.Multinomial(seed=1)(torch.ones(2, 3, device="cuda"), 4).device == x.device
    index, mask = P.RandomChoiceWithMask(4, seed=1)(x > 0)
    assert index.device == x.device and mask.all()


def test_dropout_takes_p_as_one_minus_keep_prob() -> None:
    """Some zoo projects build ``P.Dropout(p=...)`` (MindSpore refuses it; jisu takes it)."""
    assert P.Dropout(p=0.2).keep_prob == pytest.approx(0.8)
    with pytest.raises(ValueError, match="keep_prob must be in"):
        P.Dropout(p=1.0)
