"""First-step checks: each common mismatch between a pipeline and a network fails at the first
step with a message naming the column (or argument) and the fix; a pipeline that fits trains
exactly as a plain PyTorch loop does; errors the check cannot attribute, and errors after the
first step, propagate unchanged."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.train import History, LambdaCallback
from jisu.train.first_step import FirstStep, FirstStepCheck, describe_columns

N, BATCH = 32, 8


class ConvNet(nn.Module):
    """A small CNN taking (N, 3, 8, 8) images."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(self.pool(torch.relu(self.conv1(x))).flatten(1))


def arrays(seed: int = 0):
    rng = np.random.default_rng(seed)
    chw = rng.standard_normal((N, 3, 8, 8)).astype(np.float32)
    label = rng.integers(0, 3, N).astype(np.int32)  # int32 as MindSpore-style pipelines have
    return chw, label


def make_model(net=None, loss_fn="ce", amp_level="O0", metrics=None):
    torch.manual_seed(0)
    net = net or ConvNet()
    loss_fn = nn.CrossEntropyLoss() if loss_fn == "ce" else loss_fn
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return jisu.Model(net, loss_fn, opt, amp_level=amp_level, metrics=metrics)


def dataset(columns: dict, batch: bool = True):
    data = ds.NumpySlicesDataset(columns, shuffle=False)
    return data.batch(BATCH) if batch else data


def fails(run, error, *fragments):
    """Runs ``run``; checks it raises ``error`` whose message holds every fragment, chained
    from the original error; returns the error."""
    with pytest.raises(error) as info:
        run()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    return info.value


# ---------------------------------------------------------------------------- the mistakes
@pytest.mark.parametrize("sink", [False, True])
def test_an_extra_column_names_the_columns_and_the_projection(sink):
    chw, label = arrays()
    data = dataset({"image": chw, "extra": label.astype(np.float32), "label": label})
    err = fails(
        lambda: make_model().train(1, data, dataset_sink_mode=sink),
        TypeError,
        "Model.train: the first step failed",
        "inputs = all but the last: 'image' (8, 3, 8, 8) float32, 'extra' (8,) float32, "
        "label = the last: 'label' (8,) int64",
        "ConvNet.forward(x) takes 1 input but the batch gives 2 ('image', 'extra')",
        "dataset = dataset.project(['image', 'label'])",
    )
    assert "takes 2 positional arguments but 3 were given" in str(err.__cause__)
    assert err.__cause__.__traceback__ is not None  # the original traceback is kept


def test_the_projection_keeps_a_label_named_column_that_is_not_last():
    chw, label = arrays()
    data = dataset({"image": chw, "label": label, "weight": label.astype(np.float32)})
    fails(
        lambda: make_model().train(1, data),
        TypeError,
        "label = the last: 'weight' (8,) float32",
        "with the label last: dataset = dataset.project(['image', 'label'])",
    )


def file_names():
    return np.array([f"img_{i:03d}.jpg" for i in range(N)])


@pytest.mark.parametrize("sink", [False, True])
def test_a_string_column_is_named_with_the_fix(sink):
    chw, label = arrays()
    data = dataset({"image": chw, "file_name": file_names(), "label": label})
    err = fails(
        lambda: make_model().train(1, data, dataset_sink_mode=sink),
        TypeError,
        "Model.train: column 'file_name' holds strings (numpy.str_, shape (8,))",
        "dataset = dataset.project(['image', 'label'])",
        "input_columns='file_name'",
        "`jisu convert`",
    )
    assert "can't convert np.ndarray of type numpy.str_" in str(err.__cause__)


def test_a_string_column_from_a_plain_iterable_is_named_by_position_through_the_feeder():
    """Sink mode over a plain iterable: the feeder thread converts, the loop raises."""
    chw, label = arrays()
    batches = [(chw[i : i + 8], file_names()[i : i + 8], label[i : i + 8]) for i in (0, 8)]
    fails(
        lambda: make_model().train(1, batches, dataset_sink_mode=True),
        TypeError,
        "Model.train: column 1 holds strings",
        "dataset.project([...])",
    )


def test_object_and_list_of_string_columns_are_named_by_their_keys():
    """A DataLoader collates strings into a list; dict batches name their columns."""
    chw, label = arrays()
    objects = np.empty(8, dtype=object)
    objects[:] = [{"box": i} for i in range(8)]
    for bad, kind in [(objects, "Python objects"), (list(file_names()[:8]), "strings")]:
        batches = [{"image": chw[:8], "meta": bad, "label": label[:8]}]
        fails(
            lambda b=batches: make_model().train(1, b),
            TypeError,
            f"column 'meta' holds {kind}",
            "dataset.project(['image', 'label'])",
        )


def test_eval_names_a_string_column_too():
    chw, label = arrays()
    data = dataset({"image": chw, "file_name": file_names(), "label": label})
    fails(
        lambda: make_model(metrics={"acc"}).eval(data),
        TypeError,
        "Model.eval: column 'file_name' holds strings",
    )


def test_a_missing_batch_says_batch():
    chw, label = arrays()
    data = dataset({"image": chw, "label": label}, batch=False)
    err = fails(
        lambda: make_model().train(1, data),
        RuntimeError,
        "inputs = all but the last: 'image' (3, 8, 8) float32, label = the last: 'label' () int64",
        "column 'image' (3, 8, 8) is one sample, not a batch (Conv2d 'conv1' takes (N, C, H, W))",
        "dataset = dataset.batch(32)",
    )
    assert "mat1 and mat2 shapes cannot be multiplied" in str(err.__cause__)


def test_a_missing_batch_without_a_conv_says_batch_from_the_scalar_label():
    net = nn.Sequential(nn.Linear(8, 4), nn.BatchNorm1d(4), nn.Linear(4, 3))
    x = np.random.default_rng(0).standard_normal((N, 8)).astype(np.float32)
    data = dataset({"x": x, "y": arrays()[1]}, batch=False)
    fails(
        lambda: make_model(net).train(1, data),
        ValueError,
        "the label (the last column) is a scalar",
        "dataset = dataset.batch(32)",
    )


@pytest.mark.parametrize("amp_level", ["O0", "O2"])
def test_channels_last_images_say_hwc2chw(amp_level):
    chw, label = arrays()
    data = dataset({"image": chw.transpose(0, 2, 3, 1).copy(), "label": label})
    err = fails(
        lambda: make_model(amp_level=amp_level).train(1, data),
        RuntimeError,
        "the network failed: ConvNet.forward raised RuntimeError",
        "'image' (8, 8, 8, 3) float32",
        "column 'image' (8, 8, 8, 3) is channels-last (H, W, C) but Conv2d 'conv1' takes "
        "channels first (N, C, H, W) with C = in_channels = 3",
        "dataset.map(vision.HWC2CHW(), input_columns='image')",
    )
    assert "expected input[8, 8, 8, 3] to have 3 channels" in str(err.__cause__)


def test_one_unbatched_channels_last_image_says_both():
    chw, label = arrays()
    data = dataset({"image": chw.transpose(0, 2, 3, 1).copy(), "label": label}, batch=False)
    fails(
        lambda: make_model().train(1, data),
        RuntimeError,
        "is one sample, not a batch",
        "vision.HWC2CHW()",
    )


def test_a_batch_of_grayscale_images_without_a_channel_axis_says_add_one():
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 6 * 6, 3))
    gray = np.random.default_rng(0).standard_normal((N, 8, 8)).astype(np.float32)
    data = dataset({"image": gray, "label": arrays()[1]})
    fails(
        lambda: make_model(net).train(1, data),
        RuntimeError,
        "column 'image' (8, 8, 8) has no channel axis",
        "x[None]",
    )


#: MindSpore 2.0.0 printed these: Model(Dense(4, 2), SoftmaxCrossEntropyWithLogits(sparse=True)
#: (reduction "none"), SGD(0.1)), two epochs of one batch of 3: the step outputs are the
#: per-sample losses, and the update is that of their sum (reduction="sum" gives the same weights)
_MS_PER_SAMPLE = {
    "outputs": [
        [1.103186011314392, 0.5981388688087463, 0.5130152702331543],
        [0.667026162147522, 0.4294038414955139, 0.5181571245193481],
    ],
    "weight": [
        [-0.3302361071109772, -0.33160942792892456, 0.18674705922603607, -0.04331737756729126],
        [0.13023608922958374, 0.33160942792892456, 0.01325293630361557, 0.44331738352775574],
    ],
    "bias": [-0.04500089958310127, 0.04500088840723038],
}


@pytest.mark.parametrize("sink", [False, True])
def test_a_per_sample_loss_trains_on_its_sum_as_mindspore(sink):
    w = (np.arange(8).reshape(2, 4) / 10 - 0.3).astype(np.float32)
    x = np.array([[0.5, -1.0, 2.0, 0.25], [1, 0, -1, 0.5], [0.1, 0.2, 0.3, 0.4]], np.float32)
    y = np.array([0, 1, 1], np.int32)
    dense = jisu.nn.Dense(4, 2, weight_init=jisu.Tensor(w), bias_init="zeros")
    loss = jisu.nn.SoftmaxCrossEntropyWithLogits(sparse=True)
    model = jisu.Model(dense, loss, jisu.nn.SGD(dense.trainable_params(), 0.1))
    outputs = []
    record = LambdaCallback(
        on_train_step_end=lambda rc: outputs.append(rc.original_args().net_outputs.tolist())
    )
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(3)
    model.train(2, data, callbacks=[record], dataset_sink_mode=sink)
    np.testing.assert_allclose(outputs, _MS_PER_SAMPLE["outputs"], rtol=1e-5)
    np.testing.assert_allclose(dense.weight.detach(), _MS_PER_SAMPLE["weight"], rtol=1e-5)
    np.testing.assert_allclose(dense.bias.detach(), _MS_PER_SAMPLE["bias"], rtol=1e-5)


def test_a_train_cells_tuple_reaches_the_callbacks_whole_in_sink_mode():
    """MindSpore hands callbacks the train cell's whole output (Wide&Deep's TrainStepWrap
    returns (wide loss, deep loss) and its LossCallBack reads net_outputs[1]); sink mode reads
    the loss on the host for its check and keeps the other outputs."""

    class TwoLosses(jisu.nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = jisu.nn.Dense(4, 1)
            self.optimizer = jisu.nn.SGD(self.dense.trainable_params(), 0.1)

        def construct(self, x, y):
            self.optimizer.zero_grad()
            loss = ((self.dense(x) - y) ** 2).mean()
            loss.backward()
            self.optimizer.step()
            return loss.detach(), 2 * loss.detach()

    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    y = np.ones((2, 1), np.float32)
    seen = {}
    for sink in (False, True):
        torch.manual_seed(0)
        outputs = seen.setdefault(sink, [])
        record = LambdaCallback(
            on_train_step_end=lambda rc, out=outputs: out.append(rc.original_args().net_outputs)
        )
        data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(2)
        jisu.Model(TwoLosses()).train(2, data, callbacks=[record], dataset_sink_mode=sink)
    for eager, sunk in zip(seen[False], seen[True]):
        assert isinstance(sunk, tuple) and len(sunk) == 2
        torch.testing.assert_close(sunk[1], 2 * sunk[0])
        torch.testing.assert_close(sunk[0], eager[0].float())


def test_a_network_returning_integer_losses_says_return_a_float():
    class WithLoss(ConvNet):
        def forward(self, x, y):
            return super().forward(x).argmax(1)

    chw, label = arrays()
    fails(
        lambda: make_model(WithLoss(), loss_fn=None).train(1, dataset({"x": chw, "y": label})),
        ValueError,
        "network inputs = every column (loss_fn is None): 'x' (8, 3, 8, 8) float32, 'y' (8,)",
        "the network (WithLoss.forward, loss_fn=None) returned int64 (8,)",
        "a float loss",
    )


def test_a_failing_loss_names_the_output_and_the_label():
    chw, label = arrays()
    data = dataset({"image": chw, "label": label.astype(np.float32)})
    fails(
        lambda: make_model().train(1, data),
        RuntimeError,
        "the loss failed: loss_fn CrossEntropyLoss(output (8, 3) float32, label column 'label' "
        "(8,) float32)",
        "the label column 'label' is float32 but the output (8, 3) scores classes",
        "transforms.TypeCast(np.int32), input_columns='label'",
    )


def test_eval_explains_its_first_batch():
    chw, label = arrays()
    data = dataset({"image": chw.transpose(0, 2, 3, 1).copy(), "label": label})
    fails(
        lambda: make_model(metrics={"acc", "loss"}).eval(data),
        RuntimeError,
        "Model.eval: the first step failed",
        "vision.HWC2CHW()",
    )


# ---------------------------------------------------------------------------- graph mode
@pytest.fixture
def graph_mode(monkeypatch):
    """GRAPH_MODE with torch.compile "compiling" to the function itself: a user error fails
    the compiled step and the eager redo alike, as with a real compile."""
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)
    jisu.set_context(mode=jisu.GRAPH_MODE, graph_compile="always")
    yield
    jisu.set_context(mode=jisu.PYNATIVE_MODE)


def test_graph_mode_explains_a_user_error_instead_of_calling_it_a_compile_failure(graph_mode):
    chw, label = arrays()
    data = dataset({"image": chw.transpose(0, 2, 3, 1).copy(), "label": label})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fails(lambda: make_model().train(1, data), RuntimeError, "vision.HWC2CHW()")
    assert not [w for w in seen if "torch.compile failed" in str(w.message)]


def test_graph_mode_still_warns_about_a_real_compile_failure(monkeypatch):
    def broken(fn, **_):
        def compiled(*inputs):
            raise RuntimeError("C++ compiler not found")

        return compiled

    monkeypatch.setattr(torch, "compile", broken)
    jisu.set_context(mode=jisu.GRAPH_MODE, graph_compile="always")
    try:
        chw, label = arrays()
        with pytest.warns(UserWarning, match="torch.compile failed .*C\\+\\+ compiler not found"):
            make_model().train(1, dataset({"image": chw, "label": label}))
    finally:
        jisu.set_context(mode=jisu.PYNATIVE_MODE)


# ---------------------------------------------------------------------------- what stays
def manual_losses(chw, label, epochs):
    """The same training as a plain PyTorch loop: same init, same batches, same update."""
    torch.manual_seed(0)
    net = ConvNet()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loss_fn, out = nn.CrossEntropyLoss(), []
    for _ in range(epochs):
        for i in range(0, N, BATCH):
            x = torch.from_numpy(chw[i : i + BATCH])
            y = torch.from_numpy(label[i : i + BATCH]).long()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            out.append(loss.item())
    return out


@pytest.mark.parametrize("sink", [False, True])
def test_a_fitting_pipeline_trains_exactly_as_a_plain_loop(sink):
    chw, label = arrays()
    seen = []
    record = LambdaCallback(
        on_train_step_end=lambda rc: seen.append(float(rc.original_args().net_outputs))
    )
    data = dataset({"image": chw, "label": label})
    make_model().train(2, data, callbacks=[record], dataset_sink_mode=sink)
    assert seen == manual_losses(chw, label, 2)  # bit for bit


class FakeLoop:
    def __init__(self, step):
        self.step = step


def test_the_check_leaves_the_loop_after_the_first_step():
    calls = []

    def step(*tensors):
        calls.append(len(tensors))
        return torch.tensor(0.0)

    check = FirstStepCheck(FirstStep("Model.train", None, nn.Identity(), None))
    loop = FakeLoop(step)
    check.watch(loop)
    assert loop.step is check
    loop.step(torch.zeros(2), torch.zeros(2))
    assert loop.step is step and check.done and calls == [2]  # later steps: the step itself
    second = FakeLoop(step)
    check.watch(second)  # the next epoch's loop
    assert second.step is step


def test_an_error_after_the_first_step_propagates_unchanged():
    class FailsLater(ConvNet):
        calls = 0

        def forward(self, x):
            FailsLater.calls += 1
            if FailsLater.calls == 2:
                raise RuntimeError("boom at step 2")
            return super().forward(x)

    chw, label = arrays()
    with pytest.raises(RuntimeError, match=r"^boom at step 2$") as info:
        make_model(FailsLater()).train(1, dataset({"image": chw, "label": label}))
    assert info.value.__cause__ is None


def test_a_first_step_error_outside_the_network_and_loss_propagates_unchanged():
    """A loss that does not require grad fails in the backward: not a column mismatch."""
    chw, label = arrays()

    def detached(output, label):
        return nn.functional.cross_entropy(output, label).detach()

    with pytest.raises(RuntimeError, match="does not require grad") as info:
        make_model(loss_fn=detached).train(1, dataset({"image": chw, "label": label}))
    assert not str(info.value).startswith("Model.train")


def test_explaining_restores_buffers_and_random_state():
    """The diagnosis re-runs the network: BatchNorm statistics and the random stream must be
    those the failed step left (one forward), as in a run without the check."""

    class Net(ConvNet):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(3)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(super().forward(self.bn(x)))

    chw, label = arrays()
    bad_label = torch.from_numpy(label[:BATCH].astype(np.float32))  # the loss fails on it
    torch.manual_seed(0)
    reference = Net()
    torch.manual_seed(1)
    reference(torch.from_numpy(chw[:BATCH]))  # what the failed step does before the loss
    expected_mean, expected_next = reference.bn.running_mean.clone(), torch.rand(4)

    torch.manual_seed(0)
    net = Net()
    model = make_model(net)
    torch.manual_seed(1)
    with pytest.raises(RuntimeError, match="the loss failed"):
        model.train(1, [(torch.from_numpy(chw[:BATCH]), bad_label)])
    torch.testing.assert_close(net.bn.running_mean, expected_mean, rtol=0, atol=0)
    torch.testing.assert_close(torch.rand(4), expected_next, rtol=0, atol=0)


def test_describe_columns_formats():
    x, y = torch.zeros(64, 3, 32, 32), torch.zeros(64, dtype=torch.int64)
    assert describe_columns([x, y], ["image", "label"]) == (
        "inputs = all but the last: 'image' (64, 3, 32, 32) float32, "
        "label = the last: 'label' (64,) int64"
    )
    assert re.fullmatch(
        r"network inputs = every column \(loss_fn is None\): column 0 \(64, 3, 32, 32\) "
        r"float32, column 1 \(64,\) int64",
        describe_columns([x, y], None, label_to_network=True),
    )


def test_graph_mode_with_the_real_compiler_explains_the_batch():
    """torch.compile fails while tracing (a fake-tensor shape error), the eager redo fails the
    same way: one explained error, no compile-failure warning."""
    chw, label = arrays()
    data = dataset({"image": chw, "label": label}, batch=False)
    jisu.set_context(mode=jisu.GRAPH_MODE, graph_compile="always")
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            fails(lambda: make_model().train(1, data), RuntimeError, "dataset.batch(32)")
    finally:
        jisu.set_context(mode=jisu.PYNATIVE_MODE)
    assert not [w for w in seen if "torch.compile failed" in str(w.message)]


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.uint32])
def test_narrow_integer_labels_reach_the_loss_as_int64(dtype):
    """MindSpore-style label types (int32 casts, MNIST/CIFAR's uint32) train as int64 ones."""
    chw, label = arrays()
    losses = {}
    for kind in (np.int64, dtype):
        history = History()
        make_model().train(2, dataset({"x": chw, "y": label.astype(kind)}), callbacks=[history])
        losses[kind] = history.history["net_output"]
    assert len(losses[dtype]) == 2
    assert losses[dtype] == losses[np.int64]
