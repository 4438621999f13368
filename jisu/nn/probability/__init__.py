"""MindSpore's ``nn.probability`` path: only its distributions (:mod:`.distribution`)."""

from . import distribution

__all__ = ["distribution"]
