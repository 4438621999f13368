"""The article's data pipeline, ported by changing imports only, runs on jisu."""

from __future__ import annotations

import ast
import importlib.util
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
    data = load_example().create_dataset(num_samples=100, batch_size=32)
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


def test_whole_article_runs_model_o2_monitors_sink_and_the_functional_loop(capsys):
    example = load_example()
    example.main(["--size", "16", "--samples", "128", "--epochs", "2"])
    out = capsys.readouterr().out
    assert "Dataset size: 4" in out
    assert out.count("Train epoch time:") == 2
    steps = [line for line in out.splitlines() if line.startswith("epoch:")]
    assert len(steps) == 8  # LossMonitor prints every step under sink mode
    losses = [float(line.rsplit(" ", 1)[1]) for line in steps]
    assert all(np.isfinite(losses))
    assert "functional loop (auto_mixed_precision + forward_fn): losses [" in out
