"""ImageFolderDataset over s3:// (moto's server over HTTP) gives the rows of the local folder."""

from __future__ import annotations

import numpy as np
import pytest

import jisu.dataset as ds

pytestmark = pytest.mark.timeout(60)
simplejpeg = pytest.importorskip("simplejpeg")


def make_folder(root, rng) -> None:
    """Two classes of small JPEGs, one of them with a nested folder, and a non-image file."""
    for cls, count in (("cat", 3), ("dog", 2)):
        for k in range(count):
            folder = root / cls / ("sub" if k == 2 else "")
            folder.mkdir(parents=True, exist_ok=True)
            image = rng.integers(0, 256, (8 + k, 10, 3), dtype=np.uint8)
            (folder / f"img{k}.jpg").write_bytes(simplejpeg.encode_jpeg(image, quality=90))
    (root / "cat" / "notes.txt").write_text("not an image")


def rows(dataset) -> list[tuple]:
    it = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    return [(np.asarray(image), int(label)) for image, label in it]


def assert_same(got, want) -> None:
    assert len(got) == len(want)
    for (a, la), (b, lb) in zip(got, want):
        assert la == lb
        np.testing.assert_array_equal(a, b)


def test_an_image_folder_in_s3_equals_the_local_one(s3, tmp_path):
    local = tmp_path / "images"
    make_folder(local, np.random.default_rng(0))
    url = f"s3://{s3.bucket}/images"
    s3.fs().put(str(local) + "/", f"{s3.bucket}/images", recursive=True)
    for options in (
        dict(shuffle=False),
        dict(shuffle=False, decode=True),
        dict(shuffle=True, num_shards=2, shard_id=1),
        dict(shuffle=False, class_indexing={"dog": 0, "cat": 1}),
    ):
        remote = ds.ImageFolderDataset(url, **options)
        want = rows(ds.ImageFolderDataset(str(local), **options))
        assert_same(rows(remote), want)
    remote = ds.ImageFolderDataset(url, shuffle=False)
    assert remote.get_class_indexing() == {"cat": 0, "dog": 1}
    # the files' bytes, in the local order: independent of either reader
    first = (local / "cat" / "img0.jpg").read_bytes()
    assert rows(remote)[0][0].tobytes() == first


def test_a_missing_remote_folder_is_named(s3):
    with pytest.raises(FileNotFoundError, match="nothing"):
        ds.ImageFolderDataset(f"s3://{s3.bucket}/nothing")
