"""Model's MindSpore wirings used by the zoo: a train cell as the network (no loss_fn, no
optimizer) and a custom eval network with eval_indexes (MindSpore 2.0's Model._update_metrics)."""

import numpy as np
import pytest
import torch

import jisu
from jisu import dataset as ds
from jisu import nn


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4)).astype("float32")
    y = rng.integers(0, 3, 8).astype("int32")
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(4), x, y


def test_a_train_cell_trains_itself_and_its_loss_reaches_the_callbacks():
    torch.manual_seed(0)
    net = nn.Dense(4, 3)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    cell = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    data, x, y = _data()
    before = net.weight.detach().clone()
    seen = []

    class Record(jisu.train.callbacks.Callback):
        def on_train_step_end(self, run_context):
            seen.append(float(run_context.original_args().net_outputs))

    jisu.Model(cell).train(3, data, callbacks=[Record()])
    assert len(seen) == 6 and seen[-1] < seen[0]
    assert not torch.equal(before, net.weight)
    # the step's reported loss is the loss of the batch before the update (formula check)
    with torch.no_grad():
        logits = net(torch.from_numpy(x[4:]))
        expected = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y[4:]).long())
    assert float(expected) < seen[-1]


def test_eval_indexes_pick_the_loss_prediction_and_label():
    torch.manual_seed(0)
    net = nn.Dense(4, 3)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    data, x, y = _data()
    model = jisu.Model(
        net, loss, metrics={"acc", "loss"}, eval_network=nn.WithEvalCell(net, loss),
        eval_indexes=[0, 1, 2],
    )  # fmt: skip
    result = model.eval(data)
    with torch.no_grad():
        logits = net(torch.from_numpy(x))
        ce = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y).long(), reduction="none")
    acc = float((logits.argmax(1).numpy() == y).mean())
    assert result["acc"] == pytest.approx(acc)
    assert result["loss"] == pytest.approx(float(ce.reshape(2, 4).mean(1).mean()), rel=1e-5)


def test_a_custom_eval_network_without_indexes_feeds_every_output_to_the_metrics():
    net = nn.Dense(4, 3)

    class Both(nn.Cell):
        def construct(self, x, y):
            return net(x), y

    data, x, y = _data()
    result = jisu.Model(net, metrics={"acc"}, eval_network=Both()).eval(data)
    with torch.no_grad():
        acc = float((net(torch.from_numpy(x)).argmax(1).numpy() == y).mean())
    assert result["acc"] == pytest.approx(acc)


@pytest.mark.parametrize("bad", [[0, 1], (0, 1, 2), [0, 1, "2"]])
def test_eval_indexes_must_be_a_list_of_three_ints(bad):
    with pytest.raises(ValueError, match="eval_indexes"):
        jisu.Model(nn.Dense(4, 3), eval_network=nn.Dense(4, 3), eval_indexes=bad)


def test_boost_levels_are_refused_by_name():
    with pytest.raises(ValueError, match="boost_level"):
        jisu.Model(nn.Dense(4, 3), boost_level="O1")
    jisu.Model(nn.Dense(4, 3), boost_level="O0", boost_config_dict={})


def test_a_plain_network_without_optimizer_is_not_a_train_cell():
    data, _, _ = _data()
    with pytest.raises(ValueError, match="no optimizer"):
        jisu.Model(nn.Dense(4, 3)).train(1, data)
    net = nn.Dense(4, 3)
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    # a loss-scale wrapper around a train cell holds the optimizer one level down
    wrapped = nn.SequentialCell([nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)])
    from jisu.train.cell_steps import is_train_cell

    assert is_train_cell(wrapped) and not is_train_cell(net)
