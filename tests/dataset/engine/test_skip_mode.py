"""Error samples mode "skip": bad samples (decode bombs, truncated files, unreadable source rows)
are left out and counted, and the count is kept after the epoch ends."""

from __future__ import annotations

import logging
import os
import traceback

import numpy as np
import pytest
import simplejpeg
import torch

import jisu.dataset as ds
from jisu.dataset import vision
from tests.dataset.vision.test_image_bombs import declaring, jpeg_bytes


@pytest.fixture
def skip_mode():
    """Pipelines built inside the test run in "skip" mode (the mode is read when they are
    built)."""
    ds.config.set_error_samples_mode("skip")
    try:
        yield
    finally:
        ds.config.set_error_samples_mode("raise")


def good_image(k: int) -> np.ndarray:
    return np.random.default_rng(k).integers(0, 256, (12 + k, 20, 3), dtype=np.uint8)


@pytest.fixture
def folder(tmp_path):
    """Class folders of good JPEGs (image k is 12+k rows high), a decompression bomb and a
    truncated JPEG."""
    for name, ks in [("a", [0, 1, 2]), ("b", [3, 4])]:
        (tmp_path / name).mkdir()
        for k in ks:
            path = tmp_path / name / f"{k}.jpg"
            path.write_bytes(simplejpeg.encode_jpeg(good_image(k), 95))
    (tmp_path / "a" / "1_bomb.jpg").write_bytes(declaring(jpeg_bytes(), 20000, 20000).tobytes())
    truncated = simplejpeg.encode_jpeg(good_image(9), 95)
    (tmp_path / "b" / "3_truncated.jpg").write_bytes(truncated[: len(truncated) // 2])
    return tmp_path


def heights(rows) -> list[int]:
    return [int(r[0].shape[0]) for r in rows]


def labels(rows) -> list[int]:
    return [int(r[1]) for r in rows]


# ----------------------------------------------------------------- bad images are skipped


@pytest.mark.parametrize(
    "build",
    [
        lambda root: ds.ImageFolderDataset(root, shuffle=False).map(vision.Decode(), "image"),
        lambda root: ds.ImageFolderDataset(root, shuffle=False, decode=True),
        lambda root: ds.ImageFolderDataset(
            root, shuffle=False, decode=True, python_multiprocessing=True, num_parallel_workers=2
        ),
    ],
    ids=["map-Decode", "decode=True", "decode=True-processes"],
)
def test_bomb_and_truncated_jpeg_are_skipped_and_counted(folder, skip_mode, build):
    root = folder
    it = build(str(root)).create_tuple_iterator(num_epochs=1, output_numpy=True)
    rows = list(it)
    assert heights(rows) == [12, 13, 14, 15, 16]  # exactly the good images, in order
    assert labels(rows) == [0, 0, 0, 1, 1]
    assert it.skipped_samples == 2  # read after the epoch (and the iterator) ended


def test_bomb_and_truncated_jpeg_are_skipped_by_random_crop_decode_resize(folder, skip_mode):
    root = folder
    data = ds.ImageFolderDataset(str(root), shuffle=False).map(
        vision.RandomCropDecodeResize(8), "image"
    )
    it = data.batch(2).create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert [b[1].tolist() for b in it] == [[0, 0], [0, 1], [1]]
    assert it.skipped_samples == 2


# ----------------------------------------------------------------- the count is kept


def flaky(x: np.ndarray) -> np.ndarray:
    if int(x) % 5 == 3:
        raise ValueError(f"bad sample {int(x)}")
    return x


@pytest.mark.parametrize("random_access", [True, False])
def test_skipped_samples_is_kept_per_epoch_and_after_the_last(skip_mode, caplog, random_access):
    values = np.arange(10)
    if random_access:
        source = ds.NumpySlicesDataset(values, ["x"], shuffle=False)
    else:
        source = ds.GeneratorDataset(lambda: iter(values), ["x"])
    data = source.map(flaky, "x", num_parallel_workers=2)
    it = data.create_tuple_iterator(num_epochs=3, output_numpy=True)
    with caplog.at_level(logging.WARNING, logger="jisu.dataset"):
        for epoch in range(3):
            assert [int(r[0]) for r in it] == [0, 1, 2, 4, 5, 6, 7, 9]
            # exact at every epoch end, though workers may already be in the next epoch
            assert it.skipped_samples == 2 * (epoch + 1)
    assert it.skipped_samples == 6  # the iterator has closed itself: the total stays
    for epoch in range(3):
        assert f"2 sample(s) skipped in epoch {epoch} " in caplog.text


def test_skipped_samples_survives_close_and_set_state(skip_mode):
    data = ds.NumpySlicesDataset(np.arange(10), ["x"], shuffle=False).map(flaky, "x")
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    assert [int(r[0]) for r in it] == [0, 1, 2, 4, 5, 6, 7, 9]
    it.set_state({"seed": it.get_state()["seed"], "epoch": 0, "position": 0})
    assert it.skipped_samples == 2  # the first run's epoch is not forgotten
    assert [int(r[0]) for r in it] == [0, 1, 2, 4, 5, 6, 7, 9]
    it.close()
    assert it.skipped_samples == 4  # over the iterator's life: epoch 0 was run twice


# ----------------------------------------------------------------- source reads


class FlakySource:
    """A random-access source whose ``__getitem__`` fails for some indices."""

    def __init__(self, n: int = 10, bad: tuple[int, ...] = (4,)) -> None:
        self.n, self.bad = n, bad

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        if index in self.bad:
            raise OSError(f"disk read error at item {index}")
        return np.array(index), np.array(index * 10)


def test_dangling_symlink_in_an_image_folder_is_skipped(folder, skip_mode):
    root = folder
    os.remove(root / "a" / "1_bomb.jpg")
    os.remove(root / "b" / "3_truncated.jpg")
    os.symlink(root / "gone.jpg", root / "a" / "1_link.jpg")
    data = ds.ImageFolderDataset(str(root), shuffle=False)
    data = data.map([vision.Decode(), vision.Resize((8, 8))], "image")
    it = data.batch(2).create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert [b[1].tolist() for b in it] == [[0, 0], [0, 1], [1]]  # full batches after the skip
    assert it.skipped_samples == 1


def test_failed_read_in_raise_mode_names_source_index_and_file(folder):
    root = folder
    link = root / "a" / "0_link.jpg"
    os.symlink(root / "gone.jpg", link)
    data = ds.ImageFolderDataset(str(root), shuffle=False, decode=False)  # link is row 1
    with pytest.raises(RuntimeError) as info:
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    error = info.value
    assert isinstance(error, FileNotFoundError)  # the precise type is kept
    assert f"ImageFolderDataset: reading source[1] ('{link}') failed" in str(error)
    frames = traceback.extract_tb(error.__cause__.__traceback__)
    assert frames[-1].name == "__getitem__"  # where the file was opened


@pytest.mark.parametrize("processes, shuffle", [(False, False), (False, True), (True, True)])
def test_random_access_source_that_fails_for_one_index_is_skipped(skip_mode, processes, shuffle):
    data = ds.GeneratorDataset(
        FlakySource(),
        ["i", "j"],
        shuffle=shuffle,
        num_parallel_workers=2,
        python_multiprocessing=processes,
    )
    it = data.batch(3).create_tuple_iterator(num_epochs=1, output_numpy=True)
    rows = [int(i) for batch in it for i in batch[0]]
    assert sorted(rows) == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert it.skipped_samples == 1


def test_torch_map_style_dataset_that_fails_for_one_index_is_skipped(skip_mode):
    class Items(torch.utils.data.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, index):
            if index == 2:
                raise KeyError(index)
            return torch.tensor(index)

    it = ds.TorchDataset(Items(), ["x"], shuffle=False).create_tuple_iterator(output_numpy=True)
    assert [int(r[0]) for r in it] == [0, 1, 3, 4, 5]
    assert it.skipped_samples == 1


def test_source_whose_first_row_fails_can_be_built_in_skip_mode():
    with pytest.raises(OSError, match=r"reading source\[0\] failed"):
        ds.GeneratorDataset(FlakySource(bad=(0,)), ["i", "j"])  # raise mode: when built
    ds.config.set_error_samples_mode("skip")
    try:
        data = ds.GeneratorDataset(FlakySource(bad=(0,)), ["i", "j"], shuffle=False)
    finally:
        ds.config.set_error_samples_mode("raise")
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert [int(r[0]) for r in it] == list(range(1, 10))
    assert it.skipped_samples == 1


def test_failed_read_in_raise_mode_is_a_runtime_error_of_the_original_type():
    data = ds.GeneratorDataset(FlakySource(), ["i", "j"], shuffle=False)
    with pytest.raises(RuntimeError, match=r"GeneratorDataset: reading source\[4\] failed") as info:
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert isinstance(info.value, OSError)
    assert str(info.value.__cause__) == "disk read error at item 4"


def test_an_iterable_source_that_raises_stays_an_error_in_skip_mode(skip_mode):
    def rows():
        yield np.array(0)
        raise OSError("stream broke")

    with pytest.raises(RuntimeError, match=r"the source raised at row 1: OSError: stream broke"):
        list(ds.GeneratorDataset(rows, ["x"]).create_tuple_iterator(num_epochs=1))


# ----------------------------------------------------------------- decode errors keep their type


def test_decode_error_in_an_image_folder_keeps_its_type_and_names_the_file_once(folder):
    bomb = folder / "a" / "1_bomb.jpg"  # row 2: 0.jpg, 1.jpg, 1_bomb.jpg
    data = ds.ImageFolderDataset(str(folder), shuffle=False, decode=True)
    with pytest.raises(RuntimeError) as info:
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    error = info.value
    assert isinstance(error, vision.DecompressionBombError)  # not a plain ValueError
    message = str(error)
    assert message.startswith(
        f"ImageFolderDataset: reading source[2] ('{bomb}') failed: DecompressionBombError: "
        "Decode: refusing to decode"
    )
    assert "declares a 20000x20000 image" in message
    assert message.count(str(bomb)) == 1


# ----------------------------------------------------------------- files that are no files


class FifoWithWriter:
    """A FIFO at ``path`` whose write end a thread keeps opening and closing while the context
    is open: code that opens the FIFO blocking gets an empty file (and the test fails on the
    error that is missing) instead of hanging the test run."""

    def __init__(self, path) -> None:
        import threading

        self.path = path
        self.stop = threading.Event()
        self.writer = threading.Thread(target=self._release_readers, daemon=True)

    def _release_readers(self) -> None:
        while not self.stop.wait(0.005):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader is waiting
                continue
            os.close(fd)

    def __enter__(self):
        os.mkfifo(self.path)
        self.writer.start()
        return self.path

    def __exit__(self, *exc_info) -> None:
        self.stop.set()
        self.writer.join()


@pytest.fixture
def fifo_in_folder(folder):
    """The folder with a FIFO named ``a/x.jpg`` (row 4, the last of class a)."""
    with FifoWithWriter(folder / "a" / "x.jpg") as fifo:
        yield folder, fifo


def test_fifo_in_an_image_folder_is_an_error_naming_it_in_raise_mode(fifo_in_folder):
    root, fifo = fifo_in_folder
    data = ds.ImageFolderDataset(str(root), shuffle=False)
    with pytest.raises(RuntimeError) as info:
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert isinstance(info.value, ds.MalformedFileError) and info.value.path == str(fifo)
    assert str(info.value) == (
        f"ImageFolderDataset: reading source[4] ('{fifo}') failed: "
        f"MalformedFileError: '{fifo}': is not a regular file"
    )


@pytest.mark.parametrize("decode", [False, True])
def test_fifo_in_an_image_folder_is_skipped_and_counted(fifo_in_folder, skip_mode, decode):
    root, _ = fifo_in_folder
    data = ds.ImageFolderDataset(str(root), shuffle=False, decode=decode)
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    rows = list(it)
    if decode:  # the bomb and the truncated JPEG are skipped too
        assert heights(rows) == [12, 13, 14, 15, 16]
        assert it.skipped_samples == 3
    else:  # the files' bytes as stored, the FIFO left out
        kept = ["a/0.jpg", "a/1.jpg", "a/1_bomb.jpg", "a/2.jpg", "b/3.jpg", "b/3_truncated.jpg"]
        kept.append("b/4.jpg")
        assert [r[0].tobytes() for r in rows] == [(root / k).read_bytes() for k in kept]
        assert it.skipped_samples == 1
