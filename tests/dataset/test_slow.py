"""Longer runs of the core invariants (``-m slow``; CI runs them in a separate step)."""

from __future__ import annotations

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import transforms, vision
from tests.conftest import image_source, rows_of

pytestmark = pytest.mark.slow


def augmenting_pipeline(workers: int, random_access: bool):
    data = image_source(300, (20, 24, 3), 11, random_access, num_parallel_workers=workers)
    data = data.map(
        [
            vision.RandomCrop(16, padding=2),
            vision.RandomHorizontalFlip(),
            transforms.RandomChoice([vision.RandomVerticalFlip(), vision.Pad(0)]),
            vision.Resize((12, 12)),
            vision.Normalize([1, 2, 3], [4, 5, 6]),
            vision.HWC2CHW(),
        ],
        "image",
        num_parallel_workers=workers,
    )
    data = data.filter(lambda label: label % 7 != 3, "label", num_parallel_workers=workers)
    return data.batch(16, num_parallel_workers=workers).repeat(2)


@pytest.mark.parametrize("random_access", [True, False])
def test_eight_workers_match_one_over_two_epochs(random_access):
    one = rows_of(augmenting_pipeline(1, random_access), None, num_epochs=1)
    eight = rows_of(augmenting_pipeline(8, random_access), None, num_epochs=1)
    assert one == eight
    assert len(one) == 2 * -(-(300 - 43) // 16)  # 43 labels with label % 7 == 3 filtered out


def test_restore_from_every_position_of_a_long_epoch():
    data = (
        ds.NumpySlicesDataset(np.arange(997)).map(transforms.RandomApply([lambda x: -x])).batch(10)
    )
    full = rows_of(data)
    for position in range(len(full) + 1):
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        it.set_state({"seed": ds.config.get_seed(), "epoch": 0, "position": position})
        assert [r[0].tolist() for r in it] == full[position:]
