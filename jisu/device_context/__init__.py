"""MindSpore 2.5+'s ``mindspore.device_context``: per-backend settings. ``gpu``'s TF32
switches set torch's (``torch.backends.cuda.matmul.allow_tf32`` / ``cudnn.allow_tf32``);
``ascend``'s are settings of the CANN runtime, recorded and without effect on torch."""

from . import ascend, gpu

__all__ = ["ascend", "gpu"]
