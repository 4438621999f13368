"""``ckpt_to_safetensors`` / ``safetensors_to_ckpt`` as MindSpore 2.10 has them: jisu's output
of MindSpore's files is what MindSpore's converters wrote (recorded in
``tests/fixtures/ms_safetensors``), both round-trip, folders of ``rank*`` folders, name maps,
and MindSpore's refusals."""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile

import pytest
import safetensors
import torch

import jisu
from jisu.train import ms_checkpoint, serialization
from jisu.train.safetensors_convert import ckpt_to_safetensors, safetensors_to_ckpt
from jisu.train.safetensors_format import read_safetensors, write_safetensors

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_safetensors")
MS_CKPT = os.path.join(HERE, "ms_net.ckpt")
MS_NET = os.path.join(HERE, "ms_net.safetensors")
SAME_SERIALIZER = safetensors.__version__ == "0.8.0"  # the fixtures' (see test_safetensors.py)


def _expected():
    with open(os.path.join(HERE, "ms_expected.json")) as f:
        return json.load(f)


def _same(a, b):
    assert list(a) == list(b)
    for key in a:
        assert a[key].dtype == b[key].dtype and torch.equal(a[key], b[key]), key


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def test_exported_where_mindspore_has_them():
    assert jisu.ckpt_to_safetensors is ckpt_to_safetensors
    assert jisu.safetensors_to_ckpt is safetensors_to_ckpt
    assert serialization.ckpt_to_safetensors is ckpt_to_safetensors
    assert serialization.safetensors_to_ckpt is safetensors_to_ckpt


def test_ckpt_to_safetensors_gives_mindspores_file(tmp_path):
    ckpt_to_safetensors(MS_CKPT, save_path=str(tmp_path / "out"))
    out = tmp_path / "out" / "ms_net.safetensors"
    converted = os.path.join(HERE, "ms_net_converted.safetensors")
    _same(read_safetensors(out), read_safetensors(converted))
    if SAME_SERIALIZER:
        assert out.read_bytes() == _bytes(converted)


def test_safetensors_to_ckpt_gives_mindspores_file(tmp_path):
    safetensors_to_ckpt(MS_NET, save_path=str(tmp_path))
    out = tmp_path / "ms_net.ckpt"
    expected = _expected()
    back = ms_checkpoint.read_ckpt(out)
    assert list(back) == expected["from_safetensors_order"]
    _same(back, ms_checkpoint.read_ckpt(os.path.join(HERE, "ms_net_from_safetensors.ckpt")))
    assert out.read_bytes() == _bytes(os.path.join(HERE, "ms_net_from_safetensors.ckpt"))


def test_both_round_trip(tmp_path):
    shutil.copy(MS_CKPT, tmp_path / "net.ckpt")
    ckpt_to_safetensors(str(tmp_path / "net.ckpt"), save_path=str(tmp_path / "st"))
    safetensors_to_ckpt(str(tmp_path / "st" / "net.safetensors"), save_path=str(tmp_path / "back"))
    original = ms_checkpoint.read_ckpt(MS_CKPT)
    _same(ms_checkpoint.read_ckpt(tmp_path / "back" / "net.ckpt"), dict(sorted(original.items())))

    jisu_file = os.path.join(HERE, "jisu_written.safetensors")
    shutil.copy(jisu_file, tmp_path / "j.safetensors")
    safetensors_to_ckpt(str(tmp_path / "j.safetensors"))  # beside its input
    os.remove(tmp_path / "j.safetensors")
    ckpt_to_safetensors(str(tmp_path / "j.ckpt"))
    _same(read_safetensors(tmp_path / "j.safetensors"), read_safetensors(jisu_file))
    if SAME_SERIALIZER:
        assert (tmp_path / "j.safetensors").read_bytes() == _bytes(jisu_file)


def test_name_map_as_mindspore(tmp_path):
    ckpt_to_safetensors(MS_CKPT, str(tmp_path), {"fc.weight": "head.weight"})
    assert sorted(read_safetensors(tmp_path / "ms_net.safetensors")) == _expected()["renamed"]
    with pytest.raises(ValueError, match=r"name_map gives two entries of .* the name 'fc.bias'"):
        ckpt_to_safetensors(MS_CKPT, str(tmp_path), {"fc.weight": "fc.bias"})
    with pytest.raises(ValueError, match="name_map gives an entry the name ''"):
        safetensors_to_ckpt(MS_NET, str(tmp_path), {"fc.weight": ""})


def test_folders_of_ranks(tmp_path):
    src = tmp_path / "ckpts"
    for rank in ("rank_0", "rank_1"):
        (src / rank).mkdir(parents=True)
        shutil.copy(MS_CKPT, src / rank / "net_1-2_3.ckpt")
        shutil.copy(MS_CKPT, src / rank / "other.ckpt")
        (src / rank / "notes.txt").write_text("not a checkpoint")
    (src / "loose.ckpt").write_bytes(b"")  # not inside a rank folder: not converted
    ckpt_to_safetensors(str(src), str(tmp_path / "out"), file_name_regex=r"^net_", processes_num=2)
    assert sorted(os.listdir(tmp_path / "out")) == ["rank_0", "rank_1"]
    assert os.listdir(tmp_path / "out" / "rank_1") == ["net_1-2_3.safetensors"]
    ckpt_to_safetensors(str(src))  # beside each input
    assert sorted(os.listdir(src / "rank_0")) == sorted(
        ["net_1-2_3.ckpt", "net_1-2_3.safetensors", "other.ckpt", "other.safetensors", "notes.txt"]
    )
    safetensors_to_ckpt(str(src), str(tmp_path / "back"))
    assert sorted(os.listdir(tmp_path / "back" / "rank_0")) == ["net_1-2_3.ckpt", "other.ckpt"]


def test_refusals_as_mindspore(tmp_path):
    (tmp_path / "rankless").mkdir()
    cases = [
        ((str(tmp_path / "missing.ckpt"),), "file_path must be a file or a folder"),
        ((MS_NET,), "the file must be a .ckpt file"),
        ((MS_CKPT, str(tmp_path / "out.d")), "save_path must be a folder"),
        ((MS_CKPT, None, [("a", "b")]), "name_map must be a dict"),
        ((MS_CKPT, None, None, "^nomatch$"), "does not match file_name_regex"),
        ((MS_CKPT, None, None, None, 0), "processes_num must be a positive int"),
        ((MS_CKPT, None, None, None, True), "processes_num must be a positive int"),
        ((str(tmp_path / "rankless"),), "no folder whose name starts with 'rank'"),
    ]
    for args, match in cases:
        with pytest.raises(ValueError, match=match):
            ckpt_to_safetensors(*args)
    with pytest.raises(ValueError, match=r"safetensors_to_ckpt: the file must be a \.safetensors"):
        safetensors_to_ckpt(MS_CKPT)


def test_what_safetensors_cannot_hold(tmp_path):
    with open(tmp_path / "s.ckpt", "wb") as f:
        ms_checkpoint.write_ckpt(f, [("w", torch.ones(2)), ("note", "hello")])
    with pytest.raises(ValueError, match=r"holds the str entries \['note'\]"):
        ckpt_to_safetensors(str(tmp_path / "s.ckpt"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("archive/data.pkl", b"")
    (tmp_path / "old.ckpt").write_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="jisu's earlier checkpoint format"):
        ckpt_to_safetensors(str(tmp_path / "old.ckpt"))
    write_safetensors(tmp_path / "empty.safetensors", [])
    with pytest.raises(ValueError, match="holds no entry"):
        safetensors_to_ckpt(str(tmp_path / "empty.safetensors"))
    assert sorted(os.listdir(tmp_path)) == ["empty.safetensors", "old.ckpt", "s.ckpt"]
