"""The device feeder's thread never leaves the training loop waiting: a thread that ends
without handing over a batch, the end or its error is an error at ``get()``."""

import pytest
import torch

from jisu.train.feeder import DeviceFeeder


@pytest.mark.timeout(120)  # a hang guard: the verdict is the error
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_feeder_thread_that_dies_silently_is_an_error_not_a_hang(monkeypatch):
    def dies(self, batches, source, limit):
        raise SystemExit("killed before anything was handed over")

    monkeypatch.setattr(DeviceFeeder, "_run", dies)
    feeder = DeviceFeeder(iter([]), source=None, device=torch.device("cpu"))
    try:
        with pytest.raises(RuntimeError, match=r"jisu-feeder\) ended without handing over"):
            feeder.get()
    finally:
        feeder.close()


@pytest.mark.timeout(120)
def test_a_failure_inside_the_thread_is_raised_by_get(monkeypatch):
    def fails(self, batches, source, limit):
        try:
            raise ValueError("bad batch 3")
        except ValueError as exc:
            self._put(feeder_module._Failure(exc))

    import jisu.train.feeder as feeder_module

    monkeypatch.setattr(DeviceFeeder, "_run", fails)
    feeder = DeviceFeeder(iter([]), source=None, device=torch.device("cpu"))
    try:
        with pytest.raises(ValueError, match="bad batch 3"):
            feeder.get()
    finally:
        feeder.close()
