"""The article's data pipeline, ported by changing imports only, runs on jisu."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import numpy as np
import torch

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "seed_article.py"


def load_example():
    spec = importlib.util.spec_from_file_location("seed_article", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_imports_jisu_only():
    tree = ast.parse(EXAMPLE.read_text())
    modules = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert not any(m.startswith("mindspore") for m in modules)
    assert {"jisu", "jisu.dataset", "jisu.dataset.vision", "jisu.dataset.transforms"} <= modules


def test_article_pipeline_shapes_types_ranges_and_batch_count():
    data = load_example().create_dataset(num_samples=100, batch_size=32, learnable=False)
    assert data.get_dataset_size() == 3  # drop_remainder=True: 100 // 32
    assert data.get_col_names() == ["image", "label"]
    batches = list(data.create_tuple_iterator(num_epochs=1))
    assert len(batches) == 3
    labels = []
    for image, label in batches:
        assert isinstance(image, torch.Tensor) and image.shape == (32, 3, 224, 224)
        assert image.dtype == torch.float32 and label.dtype == torch.int32
        assert label.shape == (32,)
        assert float(image.min()) >= 0.0 and float(image.max()) <= 1.0
        assert abs(float(image.mean()) - 0.5) < 0.01  # uniform(0, 255) / 255
        labels.extend(label.tolist())
    # shuffle=True on the generator is a buffer shuffle: labels stay i % 10, in a new order
    assert sorted(labels) != labels
    assert np.all(np.bincount(labels, minlength=10) >= 8)


def test_learnable_images_carry_their_label():
    """By default (not in the article) each image has a white band at rows label/10 ..
    (label+1)/10 of its height, and noise elsewhere."""
    data = load_example().create_dataset(num_samples=40, batch_size=8, image_size=20)
    for images, labels in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        for image, label in zip(images, labels):
            rows = image.min(axis=(0, 2))  # per row, the darkest pixel of any channel
            assert np.flatnonzero(rows == 1.0).tolist() == [2 * label, 2 * label + 1]


def losses_in(out: str) -> list[float]:
    steps = [line for line in out.splitlines() if line.startswith("epoch:")]
    return [float(line.rsplit(" ", 1)[1]) for line in steps]


def test_whole_article_runs_model_o2_monitors_sink_and_the_functional_loop(capsys):
    example = load_example()
    example.main(["--size", "16", "--samples", "128", "--epochs", "2"])
    out = capsys.readouterr().out
    assert "Dataset size: 4" in out
    assert out.count("Train epoch time:") == 2
    losses = losses_in(out)
    assert len(losses) == 8  # LossMonitor prints every step under sink mode
    assert all(np.isfinite(losses))
    # the labels are drawn into the images: the loss falls (ln 10 = 2.3 at chance)
    assert max(losses[4:]) < min(losses[:2]) / 2
    functional = re.search(
        r"functional loop \(auto_mixed_precision \+ forward_fn\): losses \[(.*)\]", out
    )
    first, *_, last = (float(v) for v in functional[1].split(", "))
    assert last < first


def test_article_data_has_nothing_to_learn_and_says_so(capsys):
    load_example().main(["--size", "16", "--samples", "64", "--epochs", "1", "--article-data"])
    out = capsys.readouterr().out
    assert "random labels (the article's data): nothing to learn" in out
    assert all(np.isfinite(losses_in(out)))
