"""A data-parallel training script written as the model zoo writes it, ported to jisu.

Run by test_data_parallel_port.py twice: under ``torchrun --nproc_per_node=2`` (gloo, CPU)
and as one plain process (``init()`` has no job to join; ``get_group_size()`` is 1), with the
same global batch. Two ways of training, as in the zoo: ``Model(net, loss, opt).train`` and a
custom train cell that builds its ``DistributedGradReducer`` from ``_get_device_num()`` and
``_get_gradients_mean()``; each with the gradients averaged (``gradients_mean=True``) and
summed (``False``, MindSpore's default); each rank saves its checkpoints into
``ckpt_<rank>``. Writes ``<variant>_rank<r>.json`` (what each rank saw and its weights) into
the output folder.
"""

import atexit
import json
import os
import sys

import numpy as np
import torch

import jisu as ms
import jisu.dataset as ds
import jisu.nn as nn
from jisu import context
from jisu.communication import get_group_size, get_rank, init
from jisu.context import ParallelMode
from jisu.distributed import broadcast_parameters, checkpoint_writer
from jisu.nn.wrap.grad_reducer import DistributedGradReducer
from jisu.ops import composite as C
from jisu.ops import functional as F
from jisu.ops import operations as P
from jisu.parallel._utils import _get_device_num, _get_gradients_mean, _get_parallel_mode
from jisu.train.callback import CheckpointConfig, ModelCheckpoint

OUT = sys.argv[1]
GLOBAL_BATCH, ROWS, EPOCHS = 16, 64, 2


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(16, 3)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class TrainOneStepCell(nn.Cell):
    """The zoo's own train cell (research/nlp/dam, SinGAN, ADNet ...)."""

    def __init__(self, network, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()
        self.weights = optimizer.parameters
        self.optimizer = optimizer
        self.grad = C.GradOperation(get_by_list=True, sens_param=True)
        self.sens = sens
        self.reducer_flag = False
        self.grad_reducer = F.identity
        self.parallel_mode = _get_parallel_mode()
        if self.parallel_mode in (ParallelMode.DATA_PARALLEL, ParallelMode.HYBRID_PARALLEL):
            self.reducer_flag = True
        if self.reducer_flag:
            mean = _get_gradients_mean()
            degree = _get_device_num()
            self.grad_reducer = DistributedGradReducer(self.weights, mean, degree)

    def construct(self, x, y):
        loss = self.network(x, y)
        sens = P.Fill()(P.DType()(loss), P.Shape()(loss), self.sens)
        grads = self.grad(self.network, self.weights)(x, y, sens)
        grads = self.grad_reducer(grads)
        return F.depend(loss, self.optimizer(grads))


class Source:
    """A random-access source, as the zoo's dataset classes are."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __getitem__(self, index):
        return self.x[index], self.y[index]

    def __len__(self):
        return len(self.x)


def create_dataset(kind, x, y, rank_size, rank_id):
    batch = GLOBAL_BATCH // rank_size
    if kind == "numpy":
        data = ds.NumpySlicesDataset(
            {"x": x, "y": y}, shuffle=False, num_shards=rank_size, shard_id=rank_id
        )
    else:
        data = ds.GeneratorDataset(
            Source(x, y), ["x", "y"], shuffle=False, num_shards=rank_size, shard_id=rank_id
        )
    return data.batch(batch, drop_remainder=True)


def record_group_at_exit(path: str) -> None:
    """Registered before init(): atexit runs last-in first-out, so this runs after jisu's
    own exit handler and sees whether the gloo group was destroyed before teardown."""
    with open(path, "w") as f:
        json.dump({"group_alive_at_exit": torch.distributed.is_initialized()}, f)


def main():
    context.set_context(mode=context.PYNATIVE_MODE, device_target="CPU")
    world, rank_env = os.environ.get("WORLD_SIZE", "1"), os.environ.get("RANK", "0")
    atexit.register(
        record_group_at_exit, os.path.join(OUT, f"exit_world{world}_rank{rank_env}.json")
    )
    init()  # as the zoo's run_distribute branch; one plain process: nothing to join
    rank, group_size = get_rank(), get_group_size()
    context.reset_auto_parallel_context()
    context.set_auto_parallel_context(
        device_num=group_size, parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, 8)).astype(np.float32)
    x[:, 0] = np.arange(ROWS, dtype=np.float32) / ROWS  # the row id, exact in float32
    y = x[:, 1:4].argmax(1).astype(np.int32)

    for variant in ("model", "cell", "model_sum", "cell_sum"):
        # *_sum: MindSpore's default gradients_mean=False sums the ranks' gradients; the
        # script divides its learning rate by the group size to train the same weights
        summed = variant.endswith("_sum")
        context.set_auto_parallel_context(gradients_mean=not summed)
        ms.set_seed(1)  # the same initial weights on every rank, as the zoo's set_seed
        kind = "numpy" if variant.startswith("model") else "generator"
        data = create_dataset(kind, x, y, group_size, rank)
        net = Net()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        lr = 0.2 / group_size if summed else 0.1
        opt = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)
        if variant.startswith("model"):
            model = ms.Model(net, loss_fn=loss, optimizer=opt)
        else:
            cell = TrainOneStepCell(nn.WithLossCell(net, loss), opt)
            model = ms.Model(cell)
        steps = data.get_dataset_size()
        config = CheckpointConfig(save_checkpoint_steps=steps, keep_checkpoint_max=EPOCHS)
        directory = os.path.join(OUT, f"{variant}_world{group_size}", "ckpt_" + str(rank))
        saver = ModelCheckpoint(prefix="net", directory=directory, config=config)
        model.train(EPOCHS, data, callbacks=[saver], dataset_sink_mode=False)
        seen = [
            [round(float(v) * ROWS) for v in batch[0][:, 0]]
            for batch in data.create_tuple_iterator(num_epochs=1)
        ]
        report = {
            "world": group_size,
            "rank": rank,
            "parallel_mode": _get_parallel_mode(),
            "device_num": _get_device_num(),
            "gradients_mean": _get_gradients_mean(),
            "steps": steps,
            "batches": seen,
            "weights": {
                n: p.detach().double().flatten().tolist() for n, p in net.parameters_and_names()
            },
            "saved": saver.saved,
        }
        if variant.startswith("cell"):
            report["reducer"] = type(cell.grad_reducer).__name__
        name = os.path.join(OUT, f"{variant}_world{group_size}_rank{rank}.json")
        with open(name, "w") as f:
            json.dump(report, f)

    # the same folder, named relatively on one rank and through a symlink on the other
    os.makedirs(os.path.join(OUT, "writer", "real"), exist_ok=True)
    link = os.path.join(OUT, "writer", "link")
    if rank == 0 and not os.path.islink(link):
        os.symlink(os.path.join(OUT, "writer", "real"), link)
    if group_size > 1:
        torch.distributed.barrier()  # the link exists
    own = checkpoint_writer(os.path.join(OUT, "writer", str(rank)))
    shared = checkpoint_writer(os.path.join(OUT, "writer", "shared"))
    cwd = os.getcwd()
    os.chdir(OUT)
    try:
        aliased = checkpoint_writer(
            os.path.join("writer", "real") if rank == 0 else os.path.join(OUT, "writer", "link")
        )
    finally:
        os.chdir(cwd)
    # the zoo's "if rank == 0: callbacks.append(ckpt_cb)": one rank asks, nobody waits
    alone = checkpoint_writer(os.path.join(OUT, "writer", "alone")) if rank == 1 else True
    if group_size > 1:
        torch.distributed.barrier()  # as a training step's all-reduce: every rank registered
    answers = {"own": own, "shared": shared, "aliased": aliased, "alone": alone}
    answers = {name: bool(answer) for name, answer in answers.items()}
    answers["again"] = bool(shared)  # the first answer, kept
    # different moving means on each rank, then rank 0's everywhere
    bn = nn.BatchNorm1d(3)
    bn.moving_mean.add_(rank)
    before = [t.detach().sum().item() for t in (*bn.parameters(), *bn.buffers())]
    broadcast_parameters(bn)
    after = [t.detach().sum().item() for t in (*bn.parameters(), *bn.buffers())]
    with open(os.path.join(OUT, f"writer_world{group_size}_rank{rank}.json"), "w") as f:
        json.dump(answers, f)
    with open(os.path.join(OUT, f"broadcast_world{group_size}_rank{rank}.json"), "w") as f:
        json.dump({"before": before, "after": after}, f)


if __name__ == "__main__":
    main()
