"""Run by test_grad_reducer.py under ``torchrun --nproc_per_node=2`` (CPU, gloo): the
DistributedGradReducer, the collectives of ``ops`` and a data-parallel TrainOneStepCell."""

import json
import os
import sys

import torch

import jisu
import jisu.nn as nn
from jisu import ops
from jisu.communication import get_group_size, get_rank, init

out = sys.argv[1]
init()
jisu.set_auto_parallel_context(parallel_mode=jisu.ParallelMode.DATA_PARALLEL, gradients_mean=True)
rank, world = get_rank(), get_group_size()
grads = (torch.full((2, 3), float(rank + 1)), torch.arange(4.0) * (rank + 1))
params = (torch.zeros(2, 3), torch.zeros(4))
mean = nn.DistributedGradReducer(params)(grads)
total = nn.DistributedGradReducer(params, mean=False)(grads)
flag = ops.AllReduce()(torch.tensor([float(rank == 1)]))
gathered = ops.AllGather()(torch.tensor([rank]))
broadcast = ops.Broadcast(0)((torch.tensor([rank + 10.0]),))[0]

torch.manual_seed(rank)  # different weights and data per rank: the reducer keeps them apart
net = torch.nn.Linear(3, 2)
with torch.no_grad():  # the same start on every rank
    for p in net.parameters():
        p.copy_(ops.Broadcast(0)((p,))[0])
step = nn.TrainOneStepCell(
    nn.WithLossCell(net, nn.MSELoss()), nn.Momentum(net.parameters(), 0.1, 0.9)
)
for _ in range(3):
    step(torch.randn(8, 3), torch.randn(8, 2))
with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(
        {
            "world": world,
            "reducer_flag": step.reducer_flag,
            "mean": [g.tolist() for g in mean],
            "sum": [g.tolist() for g in total],
            "flag": flag.tolist(),
            "gathered": gathered.tolist(),
            "broadcast": broadcast.tolist(),
            "weights": [p.detach().double().sum().item() for p in net.parameters()],
        },
        f,
    )
