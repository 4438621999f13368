"""The model zoo's other jisu.nn metrics (``Fbeta``, ``F1``, ``Precision``, ``Recall``,
``ConfusionMatrixMetric``) against MindSpore 2.10's recorded values
(tests/fixtures/nn_metrics_zoo/make_fixtures.py), and the base at MindSpore's path
(``jisu.nn.metrics.metric.Metric``, ``rearrange_inputs``)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from jisu import nn
from jisu.nn.metrics import metric as metric_module

FIXTURE = os.path.join(
    os.path.dirname(__file__), "..", "fixtures", "nn_metrics_zoo", "mindspore.json"
)
with open(FIXTURE) as f:
    MS = json.load(f)
ARRAYS = {k: np.array(v, dtype=MS["dtypes"][k]) for k, v in MS["arrays"].items()}


def _label(case: dict) -> str:
    kwargs = ",".join(f"{k}={v}" for k, v in sorted(case["kwargs"].items()))
    return f"{case['name']}({kwargs})"


def test_the_fixture_was_recorded_by_mindspore_2_10() -> None:
    assert MS["mindspore"] == "2.10.0" and len(MS["cases"]) == 27


@pytest.mark.parametrize("case", MS["cases"], ids=_label)
def test_metrics_give_mindspores_values(case: dict) -> None:
    metric = getattr(nn.metrics, case["name"])(**case["kwargs"])
    for batch in range(2):
        metric.update(*(torch.from_numpy(ARRAYS[k][batch]) for k in case["inputs"]))
    want = np.array(case["value"], dtype=np.float64)
    np.testing.assert_allclose(np.asarray(metric.eval(), dtype=np.float64), want, rtol=1e-6)
    if "average" in case:
        np.testing.assert_allclose(metric.eval(average=True), case["average"], rtol=1e-6)


def test_the_base_lives_at_mindspores_path_and_rearranges_inputs() -> None:
    assert metric_module.Metric is nn.metrics.Metric
    assert nn.metrics.rearrange_inputs is metric_module.rearrange_inputs

    class MyMAE(metric_module.Metric):  # MindSpore's documented example
        def __init__(self):
            super().__init__()
            self.clear()

        def clear(self):
            self._sum, self._n = 0.0, 0

        @metric_module.rearrange_inputs
        def update(self, *inputs):
            y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
            self._sum += np.abs(y - y_pred).sum()
            self._n += y.shape[0]

        def eval(self):
            return self._sum / self._n

    x = torch.tensor([[0.1, 0.2, 0.6, 0.9], [0.1, 0.2, 0.6, 0.9]])
    y = torch.full((2, 4), 0.1)
    y2 = torch.tensor([[0.1, 0.25, 0.7, 0.9], [0.1, 0.25, 0.7, 0.9]])
    metric = MyMAE().set_indexes([0, 2])
    metric.update(x, y, y2)
    assert metric.eval() == pytest.approx(0.15 * 2 / 2)
    assert metric.indexes == [0, 2]
    assert MyMAE()(x, y) == pytest.approx(1.4)  # __call__: clear, update, eval


def test_the_base_does_not_clear_before_the_subclass_is_ready() -> None:
    class PerClass(nn.metrics.Metric):
        def __init__(self, classes):
            super().__init__()  # MindSpore's base does not call clear(): classes is not set yet
            self.classes = classes
            self.clear()

        def clear(self):
            self.hits = np.zeros(self.classes)

        def update(self, *inputs):
            self.hits += 1

        def eval(self):
            return self.hits

    assert PerClass(3).eval().shape == (3,)
    with pytest.raises(TypeError):
        nn.metrics.Metric()  # abstract


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="beta"):
        nn.metrics.Fbeta(0)
    with pytest.raises(TypeError, match="eval_type"):
        nn.metrics.Precision("binary")
    with pytest.raises(NotImplementedError, match="metric_name"):
        nn.metrics.ConfusionMatrixMetric(metric_name="dice")
    with pytest.raises(ValueError, match="decrease"):
        nn.metrics.ConfusionMatrixMetric(decrease="avg")
    with pytest.raises(RuntimeError, match="no samples"):
        nn.metrics.F1().eval()


@pytest.mark.parametrize("case", MS["roc"]["roc"], ids=lambda c: str(c["kwargs"]))
def test_roc_gives_mindspores_curves(case: dict) -> None:
    metric = nn.ROC(**case["kwargs"])
    metric.update(torch.tensor(case["scores"]), torch.tensor(case["labels"]))
    got = metric.eval()
    for part, key in zip(got, ("fpr", "tpr", "thresholds")):
        want = case[key]
        if isinstance(part, list):
            assert len(part) == len(want)
            for g, w in zip(part, want):
                np.testing.assert_allclose(g, w, rtol=1e-6)
        else:
            np.testing.assert_allclose(part, want, rtol=1e-6)


@pytest.mark.parametrize("case", MS["roc"]["auc"], ids=lambda c: str(c["x"]))
def test_auc_gives_mindspores_area(case: dict) -> None:
    got = nn.auc(np.array(case["x"]), np.array(case["y"]), case["reorder"])
    assert got == pytest.approx(case["value"])
