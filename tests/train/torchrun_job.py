"""Run by test_distributed.py under ``torchrun --nproc_per_node=2`` (CPU, gloo)."""

import json
import os
import sys

import numpy as np
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.train import CheckpointConfig, LossMonitor, ModelCheckpoint

out = sys.argv[1]
rows = np.arange(256, dtype=np.float32)
x = np.random.default_rng(0).standard_normal((256, 8)).astype(np.float32)
x[:, 0] = rows  # feature 0 is the row id: which rows each rank trained on
y = (x[:, 1:4].argmax(1)).astype(np.int64)
data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=True).batch(32)  # 8 batches

torch.manual_seed(int(os.environ["RANK"]))  # different initial weights: DDP must sync them
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.01)
model = jisu.Model(net, nn.CrossEntropyLoss(), opt)
seen = []
step = model._train_step


def spy(xb, yb):
    seen.append(xb[:, 0].tolist())
    return step(xb, yb)


model._train_step = spy
saver = ModelCheckpoint("ddp", os.path.join(out, "ckpt"), CheckpointConfig(1000))
model.train(2, data, callbacks=[LossMonitor(), saver], dataset_sink_mode=False)
rank = jisu.distributed.get_rank()
with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(
        {
            "world": jisu.distributed.get_group_size(),
            "batches": seen,
            "weights": [p.detach().double().sum().item() for p in net.parameters()],
            "saved": saver.saved,
        },
        f,
    )
