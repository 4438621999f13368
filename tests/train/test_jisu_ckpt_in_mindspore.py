"""The ``.ckpt`` files jisu writes load in MindSpore 2.10 with the same values.

``tests/fixtures/jisu_ckpt_in_mindspore/make_fixtures.py`` wrote four files with jisu
(``save_checkpoint(net)``, ``save_checkpoint(TrainOneStepCell with Momentum)``, and
``ModelCheckpoint`` with the optimizer and with ``saved_network``; two of them with
``crc_check=True``), then MindSpore 2.10 and 2.0.0 (the model zoo's) loaded them with
``load_checkpoint`` + ``load_param_into_net`` into the equivalent MindSpore network and
``TrainOneStepCell`` and recorded what they read. 2.0.0 cannot parse a file with MindSpore's
CRC trailer (why jisu, as MindSpore, writes none by default). These tests check that (a)
jisu's writer still writes those files for the same seeded inputs, entry for entry (so
MindSpore's verdict still applies), and (b) what MindSpore read equals what the jisu network
holds: the weights and moving statistics bit for bit, Momentum's moments equal to the step's
gradients computed by torch alone, and the MindSpore network's logits within 1e-6 of jisu's.
"""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest
import torch

import jisu
from jisu.train import ms_checkpoint
from jisu.train.ckpt_state import RESUME_ENTRY, unpack_resume

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "jisu_ckpt_in_mindspore")
FILES = ["net.ckpt", "step.ckpt", "model.ckpt", "saved_network.ckpt"]
NETWORK = ["conv.weight", "conv.bias", "bn.moving_mean", "bn.moving_variance", "bn.gamma",
           "bn.beta", "fc.weight", "fc.bias"]  # fmt: skip
MOMENTUM = ["global_step", "learning_rate", "momentum", "moments.conv.weight",
            "moments.conv.bias", "moments.bn.gamma", "moments.bn.beta", "moments.fc.weight",
            "moments.fc.bias"]  # fmt: skip
ORDER = {
    "net.ckpt": [*NETWORK, RESUME_ENTRY],
    "saved_network.ckpt": [*NETWORK, RESUME_ENTRY],
    "step.ckpt": [*NETWORK, *MOMENTUM, RESUME_ENTRY],
    "model.ckpt": [*NETWORK, *MOMENTUM, "epoch_num", "step_num", RESUME_ENTRY],
}


def _fixture_module():
    spec = importlib.util.spec_from_file_location(
        "jisu_ckpt_in_mindspore_fixtures", os.path.join(HERE, "make_fixtures.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CRC = {"step.ckpt", "saved_network.ckpt"}  # written with crc_check=True
VERSIONS = {"2.10.0": "mindspore_read", "2.0.0": "mindspore200_read"}


@pytest.fixture(scope="module", params=list(VERSIONS))
def recorded(request):
    with open(os.path.join(HERE, VERSIONS[request.param] + ".json")) as f:
        meta = json.load(f)
    assert meta["mindspore"] == request.param
    with np.load(os.path.join(HERE, VERSIONS[request.param] + ".npz"), allow_pickle=False) as z:
        values = {k: z[k] for k in z.files}
    with np.load(os.path.join(HERE, "jisu_expected.npz"), allow_pickle=False) as z:
        expected = {k: z[k] for k in z.files}
    return meta, values, expected


@pytest.mark.parametrize("file", FILES)
def test_mindspore_read_every_entry_and_loaded_the_network(recorded, file):
    meta, _, _ = recorded
    read = meta[file]
    assert read["has_crc"] == (file in CRC)
    if meta["mindspore"] == "2.0.0" and file in CRC:  # 2.0.0 parses the trailer as protobuf
        assert read["error"] == "Failed to read the checkpoint file"
        return
    assert read["order"] == ORDER[file]
    assert read["dtypes"][RESUME_ENTRY] == "UInt8" and len(read["shapes"][RESUME_ENTRY]) == 1
    if "epoch_num" in read["dtypes"]:  # as MindSpore's own ModelCheckpoint writes them
        assert read["dtypes"]["epoch_num"] == read["dtypes"]["step_num"] == "Int64"
        assert read["shapes"]["epoch_num"] == read["shapes"]["step_num"] == []
    # every network parameter loaded; the rest (the resume entry too) skipped by MindSpore
    param_not_load, ckpt_not_load = read["net_not_loaded"]
    assert param_not_load == [] and ckpt_not_load == ORDER[file][len(NETWORK) :]
    if "train_cell_not_loaded" in read:  # a TrainOneStepCell with Momentum takes the rest
        not_loaded = [n for n in ORDER[file] if n in ("epoch_num", "step_num", RESUME_ENTRY)]
        assert read["train_cell_not_loaded"] == [[], not_loaded]
    # jisu reads the same names and dtypes, and its load_param_into_net returns MindSpore's
    # lists but for the resume entry, which jisu uses (its torch-only buffers) and never lists
    params = jisu.load_checkpoint(os.path.join(HERE, file))
    assert list(params) == read["order"]
    lists = jisu.load_param_into_net(_fixture_module().jisu_net(), params)
    assert lists == ([], [n for n in ckpt_not_load if n != RESUME_ENTRY])
    for name, value in params.items():
        assert ms_checkpoint.TENSOR_TYPES[value.dtype] == read["dtypes"][name], name
        assert list(value.shape) == read["shapes"][name], name


@pytest.mark.parametrize("file", FILES)
def test_mindspore_holds_the_jisu_networks_values(recorded, file):
    meta, values, expected = recorded
    if "error" in meta[file]:
        return  # a file 2.0.0 cannot read (checked above)
    net = _fixture_module().jisu_net()
    jisu.load_checkpoint(os.path.join(HERE, file), net=net)
    own = net.parameters_dict()
    for name in NETWORK:
        np.testing.assert_array_equal(values[f"{file}:{name}"], expected[name], err_msg=name)
        np.testing.assert_array_equal(values[f"{file}:{name}"], own[name].detach().numpy())
    net.set_train(False)
    with torch.no_grad():
        logits = net(torch.from_numpy(expected["__input__"])).numpy()
    np.testing.assert_array_equal(logits, expected["__logits__"])
    np.testing.assert_allclose(values[f"{file}:__logits__"], logits, rtol=0, atol=1e-6)
    if file in ("step.ckpt", "model.ckpt"):  # the optimizer MindSpore's cell then held
        for name in MOMENTUM[3:]:  # one step from zero: the moments are the gradients
            np.testing.assert_allclose(
                values[f"{file}:cell:{name}"], expected[name], rtol=1e-6, atol=1e-7
            )
        assert values[f"{file}:cell:global_step"].tolist() == [1]
        assert float(values[f"{file}:cell:learning_rate"]) == pytest.approx(0.1)
        assert float(values[f"{file}:cell:momentum"]) == pytest.approx(0.9)
    if file == "model.ckpt":
        assert int(values[f"{file}:epoch_num"]) == int(values[f"{file}:step_num"]) == 1


def test_jisus_writer_still_writes_these_files(tmp_path):
    _fixture_module().write_jisu_files(str(tmp_path))
    for file in FILES:
        committed = ms_checkpoint.read_ckpt(os.path.join(HERE, file))
        written = ms_checkpoint.read_ckpt(str(tmp_path / file))
        assert list(written) == list(committed), file
        for name, value in committed.items():
            if name == RESUME_ENTRY:
                same_plain(unpack_resume(written[name], file), unpack_resume(value, file), file)
            else:  # the bytes MindSpore read: same dtype, shape and every bit
                assert written[name].dtype == value.dtype, name
                assert torch.equal(written[name], value), f"{file}: {name}"


def same_plain(a, b, where):
    """``a`` and ``b`` are equal tensors and plain values, recursively."""
    assert type(a) is type(b), where
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            same_plain(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same_plain(x, y, f"{where}[{i}]")
    else:
        assert a == b, where
