"""Targets for ``jisu doctor`` (the report screenshot in docs/ was made from ``train``).

jisu doctor --pipeline examples/doctor_example.py:pipeline
jisu doctor --train examples/doctor_example.py:train
"""

import tempfile

import torch
from torch import nn

import jisu
from jisu.job import pipeline as digits_pipeline
from jisu.job import small_cnn, write_digits_records

_folder = tempfile.mkdtemp(prefix="jisu-doctor-example-")
TRAIN, TEST = write_digits_records(_folder)


def pipeline():
    """The digits records -> decode -> crop -> normalize -> batch(64), 2 workers."""
    return digits_pipeline(TRAIN, True, 64, 2, False)


def train():
    """A small CNN in fp32, eager: the step dominates on a CPU."""
    net = small_cnn(10)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    return jisu.Model(net, nn.CrossEntropyLoss(), optimizer), pipeline()
