"""SummaryRecord: the values queued by add_value are in the TensorBoard event files after
record(step), read back with tensorboard's own event reader (independent of the writer)."""

import pytest
import torch

from jisu.train import SummaryRecord

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _read(log_dir):
    acc = event_accumulator.EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def test_scalars_are_written_at_their_steps_and_the_newest_value_wins(tmp_path):
    with SummaryRecord(str(tmp_path)) as record:
        record.add_value("scalar", "loss", torch.tensor(2.5))
        assert record.record(1)
        record.add_value("scalar", "loss", torch.tensor(9.0))
        record.add_value("scalar", "loss", torch.tensor([1.5]))  # replaces the 9.0
        record.add_value("histogram", "w", torch.arange(6.0))
        assert record.record(2)
    assert not record.record(3)  # closed
    acc = _read(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(1, 2.5), (2, 1.5)]
    assert "w" in acc.Tags()["histograms"]


def test_bad_plugins_names_and_values_are_refused(tmp_path):
    record = SummaryRecord(str(tmp_path))
    with pytest.raises(ValueError, match="MindInsight"):
        record.add_value("train_lineage", "x", torch.tensor(1.0))
    with pytest.raises(ValueError, match="no such plugin"):
        record.add_value("audio", "x", torch.tensor(1.0))
    with pytest.raises(TypeError, match="Tensor"):
        record.add_value("scalar", "x", 1.0)
    with pytest.raises(ValueError, match="one element"):
        record.add_value("scalar", "x", torch.ones(2))
    with pytest.raises(TypeError, match="step"):
        record.record(1.0)
    record.close()
