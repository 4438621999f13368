"""Run by test_distributed.py under ``torchrun --nproc_per_node=2`` (CPU, gloo):
``amp_level="fastest"`` where each rank's own measurement would choose differently; with
``conv`` as the second argument, a convolution network and ``memory_format="fastest"`` too
(``conv-o2``: with ``amp_level="O2"``, only the layouts are measured)."""

import functools
import json
import os
import sys

import numpy as np
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.train import model as model_module
from jisu.train.amp_choice import choose_for

out = sys.argv[1]
conv = sys.argv[2:3] in (["conv"], ["conv-o2"])
level = "O2" if sys.argv[2:3] == ["conv-o2"] else "fastest"  # a fixed level: layouts only
rank = int(os.environ["RANK"])
shape = (256, 3, 4, 4) if conv else (256, 8)
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
y = (x.reshape(256, -1)[:, 1:4].argmax(1)).astype(np.int64)
data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(32)

now = [0.0]
# a fake clock that only forwards advance: on rank 0 bf16 (O2) is the fastest, on rank 1 fp32
costs = {0: {"O0": 0.03, "O1": 0.02, "O2": 0.01}, 1: {"O0": 0.01, "O1": 0.02, "O2": 0.03}}[rank]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 3)

    def forward(self, x):
        level = "O1" if torch.is_autocast_enabled("cpu") else None
        now[0] += costs[level or ("O2" if self.a.weight.dtype == torch.bfloat16 else "O0")]
        return self.b(torch.relu(self.a(x)))


class ConvNet(nn.Module):
    """Channels-last makes O0 the fastest on rank 0 (O0 channels-last: 5 ms; O2 channels-last
    ties, the more precise is taken) and costs more on rank 1 (contiguous its fastest)."""

    def __init__(self):
        super().__init__()
        self.conv, self.head = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(64, 3)

    def forward(self, x):
        level = "O1" if torch.is_autocast_enabled("cpu") else None
        level = level or ("O2" if self.conv.weight.dtype == torch.bfloat16 else "O0")
        now[0] += costs[level]
        if not self.conv.weight.is_contiguous():  # channels-last
            now[0] += (-0.025 if level == "O0" else -0.005) if rank == 0 else 0.005
        return self.head(torch.relu(self.conv(x)).flatten(1))


model_module.choose_for = functools.partial(choose_for, clock=lambda: now[0])
torch.manual_seed(rank)
net = ConvNet() if conv else Net()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
layout = "fastest" if conv else "contiguous"
model = jisu.Model(net, nn.CrossEntropyLoss(), opt, amp_level=level, memory_format=layout)
model.train(2, data, dataset_sink_mode=False)
with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(
        {
            "level": model.amp_level,
            "memory_format": model.memory_format,
            "reason": model.amp_choice.reason,
            "weights": [p.detach().double().sum().item() for p in net.parameters()],
        },
        f,
    )
