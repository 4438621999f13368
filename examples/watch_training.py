"""What you see while training: the progress bar, MindSpore's monitors, TensorBoard, a CSV log
and the best checkpoints, on the main job's data (scikit-learn digits as JPEG records).

    python examples/watch_training.py --out /tmp/watch     # then:
    tensorboard --logdir /tmp/watch/summary                # pip install "jisu[tensorboard]"

Sink mode: the bar counts the steps as they are dispatched and shows the loss read at the end
of the previous sink; each epoch ends with the monitors' lines and the validation accuracy.
"""

from __future__ import annotations

import argparse
import os

import torch
from torch import nn

from jisu.job import cosine_lr, num_classes, pipeline, small_cnn, write_digits_records
from jisu.train import (
    CheckpointConfig,
    CSVLogger,
    LearningRateScheduler,
    LossMonitor,
    Model,
    ModelCheckpoint,
    SummaryCollector,
    TimeMonitor,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="watch-training", help="folder for logs and checkpoints")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    train_path, test_path = write_digits_records(args.out)
    train = pipeline(train_path, train=True, batch_size=32, workers=args.workers, resize=False)
    test = pipeline(test_path, train=False, batch_size=256, workers=args.workers, resize=False)

    torch.manual_seed(0)
    net = small_cnn(num_classes(train_path))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    model = Model(net, nn.CrossEntropyLoss(), optimizer, metrics={"acc"}, amp_level="O2")
    best = CheckpointConfig(monitor="acc", mode="max", save_top_k=2, save_last=True)
    callbacks = [
        LearningRateScheduler(cosine_lr(0.05, args.epochs * train.get_dataset_size())),
        LossMonitor(per_print_times=15),
        TimeMonitor(),
        SummaryCollector(os.path.join(args.out, "summary"), collect_freq=5),
        CSVLogger(os.path.join(args.out, "epochs.csv")),
        ModelCheckpoint("digits", os.path.join(args.out, "checkpoints"), best),
    ]
    model.fit(args.epochs, train, test, callbacks=callbacks, dataset_sink_mode=True)
    print(f"logs, curves and checkpoints in {os.path.abspath(args.out)}")


if __name__ == "__main__":
    main()
