"""MindSpore's import paths and names, with ``mindspore`` swapped for ``jisu``, checked against
MindSpore 2.10's recorded answers (``tests/fixtures/ms_names``): the paths import, their names
exist where jisu has the op, the vision enums have MindSpore's members and values, and
``Decode``, ``TypeCast``, ``Schema``, ``Sampler.parse``, ``add_sampler`` and
``config.set_auto_offload`` behave as recorded."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

import jisu
import jisu.dataset as ds
from jisu.dataset import transforms, vision
from jisu.dataset.vision import utils

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ms_names"
MS = json.loads((FIXTURES / "mindspore.json").read_text())
IMAGE = str(FIXTURES / "image.png")

#: names MindSpore 2.10 exports that jisu does not have (the ops are not implemented), and
#: module-internal names (imports of that module) that are not API
LACKING = {
    "DecodeVideo", "RandomLighting", "VideoDecoder", "VideoFrameDvpp", "DecodeParams",
    "encode_jpeg", "encode_png",
    "read_video", "read_video_timestamps", "write_file", "write_jpeg", "write_png",
    "not_random", "get_video_backend",
}  # fmt: skip
INTERNAL = {
    "AFFINE", "ANTIALIAS", "CUBIC", "Enum", "FLIP_LEFT_RIGHT", "FLIP_TOP_BOTTOM", "Fraction",
    "Image", "IntEnum", "LINEAR", "NEAREST", "PERSPECTIVE", "cde", "check_file", "check_value",
    "gc", "importlib", "logger", "math", "mindspore", "np", "numbers", "os", "parse_padding",
    "re", "type_check", "type_check_list", "py_transforms_util", "transforms", "validators",
    "vision", "utils",
}  # fmt: skip


def test_fixture_is_mindspore_2_10():
    assert MS["mindspore"].startswith("2.10")


@pytest.mark.parametrize(
    "path",
    [p for p, v in MS["paths"].items() if p.startswith("mindspore.dataset") and "names" in v],
)
def test_mindspore_paths_import_under_jisu_with_their_names(path):
    module = importlib.import_module(path.replace("mindspore", "jisu", 1))
    wanted = set(MS["paths"][path]["names"]) - LACKING - INTERNAL
    if path.endswith(("vision.transforms", "transforms.transforms")):  # their package's API
        wanted &= set(MS["paths"][path.rpartition(".")[0]]["names"])
    missing = sorted(n for n in wanted if not hasattr(module, n))
    assert missing == []


@pytest.mark.parametrize(
    "path",
    [
        "mindspore.dataset.vision.c_transforms",
        "mindspore.dataset.vision.py_transforms",
        "mindspore.dataset.transforms.c_transforms",
        "mindspore.dataset.transforms.py_transforms",
        "mindspore.dataset.transforms.vision.c_transforms",
    ],
)
def test_legacy_paths_kept_although_mindspore_2_10_removed_them(path):
    assert MS["paths"][path] == {"error": "ModuleNotFoundError"}  # kept on purpose in jisu
    module = importlib.import_module(path.replace("mindspore", "jisu", 1))
    assert getattr(module, "Decode", None) is vision.Decode or module.Compose is transforms.Compose


def test_transforms_vision_attribute_holds_the_vision_names():
    assert MS["paths"]["from mindspore.dataset.transforms import vision"] == {
        "is mindspore.dataset.vision": True
    }
    from jisu.dataset.transforms import vision as tv

    assert all(getattr(tv, n) is getattr(vision, n) for n in vision.__all__)


def test_legacy_names_of_the_1x_modules():
    from jisu.dataset.transforms.py_transforms import OneHotOp
    from jisu.dataset.vision.c_transforms import RgbToBgr
    from jisu.dataset.vision.py_transforms import Cutout, Normalize

    rgb = np.array(MS["image"], np.uint8)
    np.testing.assert_array_equal(RgbToBgr()(rgb), rgb[..., ::-1])
    np.testing.assert_array_equal(OneHotOp(3)(np.array(2)), [0, 0, 1])
    chw = np.ones((3, 2, 2), np.float32)
    out = Normalize([0.5, 0.25, 0.0], [0.5, 0.5, 1.0])(chw)  # 1.x: CHW after ToTensor
    np.testing.assert_allclose(out[:, 0, 0], [1.0, 1.5, 1.0])
    cut = Cutout(2)(np.ones((3, 4, 4), np.float32)) == 0  # 1.x: the patch spans the channels
    assert cut.any() and (cut == cut[0]).all()


@pytest.mark.parametrize("name", list(MS["enums"]))
def test_enums_have_mindspore_members_values_and_base(name):
    recorded = MS["enums"][name]
    enum = getattr(utils, name)
    assert {k: v.value for k, v in enum.__members__.items()} == recorded["members"]
    assert enum.__mro__[1].__name__ == recorded["base"]
    assert getattr(vision, name) is enum  # one class, whichever path imports it


def test_inter_compares_as_mindspore_int():
    assert utils.Inter.BILINEAR == 2 and utils.Inter(3) is utils.Inter.BICUBIC
    assert utils.Border.EDGE == "edge" and utils.AutoAugmentPolicy("svhn").name == "SVHN"


def test_decode_rgb():
    data = np.fromfile(IMAGE, np.uint8)
    rgb = np.array(MS["image"], np.uint8)
    assert MS["decode"]["Decode() equals the RGB image"] == {"ok": True}
    np.testing.assert_array_equal(vision.Decode()(data), rgb)
    # MindSpore 2.10 refuses rgb= (TypeError); jisu takes 1.x's argument on purpose
    assert MS["decode"]["Decode(rgb=True)"]["error"] == "TypeError"
    np.testing.assert_array_equal(vision.Decode(rgb=True)(data), rgb)
    np.testing.assert_array_equal(vision.Decode(rgb=False)(data), rgb[..., ::-1])
    with pytest.raises(TypeError, match="Decode: rgb must be a bool"):
        vision.Decode(rgb=1)


def test_read_image_and_image_helpers():
    rgb = np.array(MS["image"], np.uint8)
    recorded = MS["decode"]
    data = utils.read_file(IMAGE)
    assert [str(data.dtype), int(data.size)] == [recorded["read_file"]["ok"][0], data.size]
    assert data.size == Path(IMAGE).stat().st_size
    np.testing.assert_array_equal(utils.read_image(IMAGE), rgb)
    gray = utils.read_image(IMAGE, utils.ImageReadMode.GRAYSCALE)
    expected = np.array(recorded["read_image(GRAYSCALE)"]["ok"])
    assert gray.shape == expected.shape and np.abs(gray.astype(int) - expected).max() <= 1
    with pytest.raises(TypeError, match="read_image: mode must be an ImageReadMode"):
        utils.read_image(IMAGE, 0)  # MindSpore: TypeError too
    with pytest.raises(ValueError, match=r"read_file: .* does not exist"):
        utils.read_file(str(FIXTURES / "missing.png"))
    assert utils.get_image_size(rgb) == recorded["get_image_size"]["ok"]
    assert utils.get_image_size(rgb[..., 0]) == recorded["get_image_size HW"]["ok"]
    assert utils.get_image_num_channels(rgb) == recorded["get_image_num_channels"]["ok"]
    assert utils.get_image_num_channels(rgb[..., 0]) == recorded["get_image_num_channels HW"]["ok"]


def test_type_cast_data_type_keyword():
    x = np.array([1.7, -2.2, 3.0], np.float32)
    dtype, values = MS["type_cast"]["TypeCast(data_type=int32)"]["ok"]
    out = transforms.TypeCast(data_type=jisu.int32)(x)
    assert (str(out.dtype), out.tolist()) == (dtype, values)
    assert transforms.TypeCast(jisu.int32)(x).tolist() == MS["type_cast"]["TypeCast(int32)"]["ok"]
    got = str(transforms.TypeCast(data_type=np.float16)(x).dtype)
    assert got == MS["type_cast"]["TypeCast(data_type=np.float16)"]["ok"]
    with pytest.raises(TypeError):  # MindSpore: missing a required argument 'data_type'
        transforms.TypeCast(dtype=jisu.int32)


def test_schema_from_a_file_positional_and_keyword():
    recorded = MS["schema"]["Schema(path).to_json()"]["columns"]
    for schema in (
        ds.Schema(str(FIXTURES / "schema.json")),
        ds.Schema(schema_file=FIXTURES / "schema.json"),
    ):
        assert schema.column_names == [c["name"] for c in recorded]
        assert [str(t) for t in schema.column_types] == [c["type"] for c in recorded]
        assert schema.columns[1]["shape"] == recorded[1]["shape"]
    assert MS["schema"]["Schema('missing.json')"]["error"] == "ValueError"
    with pytest.raises(FileNotFoundError, match=r"Schema: the schema file .* does not exist"):
        ds.Schema(str(FIXTURES / "missing.json"))
    with pytest.raises(TypeError, match="Schema: schema_file must be a path"):
        ds.Schema(3)


def test_sampler_parse_returns_the_sampler():
    # MindSpore returns its C++ sampler object; jisu's engine runs the Python sampler itself
    assert MS["samplers"]["SequentialSampler.parse()"] == "SequentialSamplerObj"
    for sampler in (ds.SequentialSampler(), ds.RandomSampler(), ds.DistributedSampler(2, 0)):
        assert sampler.parse() is sampler


def _rows(data) -> list[int]:
    return [int(r[0]) for r in data.create_tuple_iterator(output_numpy=True)]


@pytest.mark.parametrize(
    ("key", "build", "new"),
    [
        (
            "shuffle=False + add_sampler(DistributedSampler(2, 1, shuffle=False))",
            lambda: ds.GeneratorDataset(list(range(10)), "x", shuffle=False),
            lambda: ds.DistributedSampler(2, 1, shuffle=False),
        ),
        (
            "SequentialSampler(2, 6) + add_sampler(SequentialSampler(1, 3))",
            lambda: ds.GeneratorDataset(list(range(10)), "x", sampler=ds.SequentialSampler(2, 6)),
            lambda: ds.SequentialSampler(1, 3),
        ),
        (
            "SubsetSampler([7, 3, 5, 1]) + add_sampler(DistributedSampler(2, 0))",
            lambda: ds.GeneratorDataset(
                list(range(10)), "x", sampler=ds.SubsetSampler([7, 3, 5, 1])
            ),
            lambda: ds.DistributedSampler(2, 0, shuffle=False),
        ),
        (
            "num_samples=4 + add_sampler(SubsetSampler([3, 0]))",
            lambda: ds.GeneratorDataset(list(range(10)), "x", num_samples=4, shuffle=False),
            lambda: ds.SubsetSampler([3, 0]),
        ),
    ],
)
def test_add_sampler_picks_from_what_the_source_read(key, build, new):
    data = build()
    assert repr(data.add_sampler(new())) == MS["samplers"]["add_sampler returns"]
    assert _rows(data) == MS["samplers"][key]
    assert data.get_dataset_size() == len(MS["samplers"][key])


def test_add_sampler_is_a_source_method():
    assert MS["samplers"]["map(...).add_sampler"]["error"] == "AttributeError"
    assert not hasattr(ds.GeneratorDataset(list(range(4)), "x").map(lambda x: x), "add_sampler")
    data = ds.GeneratorDataset(list(range(4)), "x", shuffle=False)
    taken = ds.SequentialSampler()
    taken.add_child(ds.SequentialSampler())
    with pytest.raises(ValueError, match="has a child already"):
        data.add_sampler(taken)


def test_auto_offload_setting():
    recorded = MS["offload"]
    assert ds.config.get_auto_offload() is recorded["get_auto_offload() default"]
    try:
        ds.config.set_auto_offload(True)
        assert ds.config.get_auto_offload() is recorded["after set_auto_offload(True)"]
        data = ds.NumpySlicesDataset({"x": np.ones((2, 2, 2, 3), np.uint8)}, shuffle=False)
        mapped = data.map([vision.HWC2CHW()], "x")  # a tail that runs on the device
        assert [type(op).__name__ for op in mapped.offloaded] == ["HWC2CHW"]
        plain = data.map([vision.RandomHorizontalFlip()], "x")  # no such tail: unchanged
        assert plain.offloaded == []
    finally:
        ds.config.set_auto_offload(False)
    assert recorded["set_auto_offload(1)"]["error"] == "TypeError"
    with pytest.raises(TypeError, match="set_auto_offload: offload must be a bool"):
        ds.config.set_auto_offload(1)
