"""The per-sample random streams: Philox keyed by (seed, op), counter (epoch, sample)."""

from __future__ import annotations

import numpy as np

from jisu.dataset.core.rng import sample_rng


def reference(seed, epoch, index, op_key):
    """The stream as a fresh NumPy Philox defines it."""
    counter = [0, index, epoch, 1]
    return np.random.Generator(np.random.Philox(key=[seed, op_key], counter=counter))


def test_streams_equal_a_fresh_philox_with_that_key_and_counter():
    for args in [(1, 2, 3, 4), (0, 0, 0, 0), (2**63, 5, 7, 9), (7, 1, 10**9, 3)]:
        np.testing.assert_array_equal(sample_rng(*args).random(8), reference(*args).random(8))


def test_a_generator_still_in_use_is_not_disturbed_by_the_next_one():
    first = sample_rng(1, 2, 3, 4)
    head = first.random(2)
    second = sample_rng(5, 6, 7, 8)  # made while `first` is alive
    expected = reference(1, 2, 3, 4)
    np.testing.assert_array_equal(head, expected.random(2))
    np.testing.assert_array_equal(first.random(4), expected.random(4))
    np.testing.assert_array_equal(second.random(4), reference(5, 6, 7, 8).random(4))
