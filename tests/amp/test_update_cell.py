"""LossScaleManager.get_update_cell: MindSpore 2.0.0's answers (recorded by hand from
/work/ms200: DynamicLossScaleManager(1024, 2, 100) -> DynamicLossScaleUpdateCell at 1024 with
factor 2; FixedLossScaleManager(8, False) -> None; FixedLossScaleManager(8, True) ->
FixedLossScaleUpdateCell at 8)."""

import torch

import jisu
from jisu import nn


def test_dynamic_manager_gives_a_dynamic_update_cell_with_its_rule():
    cell = jisu.DynamicLossScaleManager(1024, 2, 100).get_update_cell()
    assert isinstance(cell, nn.DynamicLossScaleUpdateCell)
    assert cell.get_loss_scale() == 1024
    scale = torch.tensor(1024.0)
    cell(scale, torch.tensor(True))  # an overflow halves the scale
    assert float(scale) == 512.0


def test_fixed_manager_gives_a_cell_only_when_it_drops_overflowing_steps():
    assert jisu.FixedLossScaleManager(8, False).get_update_cell() is None
    cell = jisu.FixedLossScaleManager(8, True).get_update_cell()
    assert isinstance(cell, nn.FixedLossScaleUpdateCell)
    assert cell.get_loss_scale() == 8
