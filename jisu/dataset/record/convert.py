"""Conversion to the record format: image folders, MindRecord, NumPy arrays, any pipeline.

Conversion is all-or-nothing: rows go to temporary files that become the data set only when
every row is written (``FileWriter.commit``); an interrupted conversion (Ctrl-C, an error)
removes them, so a rerun starts from scratch and no half data set is ever visible.

The parts live in their own modules: :mod:`~jisu.dataset.record.image_files` (image folders),
:mod:`~jisu.dataset.record.array_files` (checked ``.npz``/``.npy`` reading) and
:mod:`~jisu.dataset.record.chunk_writer` (the write itself); this module picks the source and
keeps their public names importable from here.
"""

from __future__ import annotations

import os

from .array_files import NPZ_MAX_INFLATED_BYTES, NPZ_MAX_RATIO, NPZ_RATIO_FREE_BYTES, load_arrays
from .chunk_writer import (
    array_chunks,
    balanced_block_rows,
    dealt_rows,
    field_of,
    write_chunks,
    write_dataset,
)
from .image_files import (
    IMAGE_EXTENSIONS,
    RAISE_CAP,
    ImageFiles,
    check_inside,
    check_sizes,
    folder_chunks,
    list_image_folder,
    read_files_column,
    reencoder,
)
from .storage import is_url

__all__ = [
    "IMAGE_EXTENSIONS",
    "NPZ_MAX_INFLATED_BYTES",
    "NPZ_MAX_RATIO",
    "NPZ_RATIO_FREE_BYTES",
    "ImageFiles",
    "array_chunks",
    "balanced_block_rows",
    "check_inside",
    "convert",
    "dealt_rows",
    "field_of",
    "folder_chunks",
    "list_image_folder",
    "load_arrays",
    "read_files_column",
    "reencoder",
    "write_chunks",
    "write_dataset",
]


def convert(
    src: str,
    dst: str,
    shards: int = 1,
    workers: int | None = None,
    max_size: int | None = None,
    quality: int | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    file_names: bool = False,
    storage_options: dict | None = None,
    follow_links: bool = False,
    max_file_size: int | str | None = None,
) -> dict:
    """Convert an image folder, MindRecord files, a ``.npz``/``.npy`` file or a jisu record
    data set into a jisu record data set at ``dst``; returns the summary of the write.

    Args:
        src: a class-per-subfolder image folder (columns ``image``: the file's bytes, ``label``:
            int32, the class's index among the sorted folder names, recorded as the manifest's
            ``class_indexing``), MindRecord files, a ``.npz``/``.npy`` file (one column per
            array) or a jisu record data set (its ``class_indexing`` kept).
        dst: the record data set to write (``dst`` or ``dst0`` .. ``dst{shards-1}``, plus
            ``dst.manifest.json``).
        shards: number of shard files; rows are dealt evenly to all of them (a file-level
            shuffle needs rows in every shard).
        workers: reading/encoding threads (default: the CPUs this process may use).
        max_size, quality: re-encode images as JPEG (``quality``, default 90) with the longer
            side at most ``max_size``; by default the files' bytes are stored as they are.
        overwrite: replace an existing ``dst`` (the old data set stays readable until the new
            one is complete).
        progress: show a progress bar (default: when stderr is a terminal).
        file_names: image folders only: add a third column ``file_name`` (string, the path
            relative to ``src``), to trace a row back to its file. Off by default: ``Model``
            feeds every column but the last to the network, so the recipe
            ``RecordDataset(dst).map(Decode(), "image")`` needs exactly ``image, label``; with
            ``file_names`` drop it before training (``.project(["image", "label"])``).
        storage_options: the filesystem options of a URL ``dst`` or ``src`` (``s3://...``,
            any fsspec URL; a record data set as ``src``); by default the environment's.
        follow_links: image folders only: also pack files whose real path lies outside
            ``src`` (through a symbolic link); by default such a file stops the conversion
            (:func:`check_inside`), as a record file may be shared.
        max_file_size: image folders only: the largest image file packed, in bytes or as a
            size such as ``"4GiB"`` (``jisu convert --max-file-size``); default
            :data:`~jisu.dataset.sources.image_files.MAX_FILE_SIZE` (1 GiB: files are read
            whole, 512 at a time). Every file's size is checked from ``stat`` before anything
            is read or written, so a sparse 50 GiB ``.jpg`` is refused at once, named.

    Arrays (``.npz``/``.npy``) are never unpickled, and a ``.npz``'s compressed arrays are
    checked before they are inflated (:func:`load_arrays`: at most
    :data:`NPZ_MAX_INFLATED_BYTES` in all, at most :data:`NPZ_MAX_RATIO` times their
    compressed size above :data:`NPZ_RATIO_FREE_BYTES`).

    Raises:
        FileNotFoundError: ``src`` is none of the above.
        FileExistsError: ``dst`` exists and ``overwrite`` is False.
        ValueError: a file that a link leads out of an image folder (without
            ``follow_links``), or over ``max_file_size``; arrays over the caps above, or
            malformed.
    """
    from ..core.cpus import available_cpus
    from ..sources.generator import GeneratorDataset
    from ..sources.image_files import file_size_cap
    from ..sources.record import RecordDataset
    from .mindrecord import is_mindrecord

    image_schema = {"image": {"type": "bytes"}, "label": {"type": "int32"}}
    if file_names:
        image_schema["file_name"] = {"type": "string"}
    schema = None
    class_indexing = None  # a record data set's own passes through write_dataset
    if file_names and not os.path.isdir(src):
        raise ValueError(
            f"convert: file_names=True applies to image folders only; '{src}' is not a folder. "
            "Leave file_names at False"
        )
    cap = file_size_cap(max_file_size, "convert")
    if max_file_size is not None and not os.path.isdir(src):
        raise ValueError(
            f"convert: max_file_size applies to image folders only; '{src}' is not a folder. "
            "Leave max_file_size at None"
        )
    if os.path.isdir(src):
        paths, labels, classes = list_image_folder(src)
        if not follow_links:
            check_inside(src, paths)  # before any byte is read
        check_sizes(paths, cap)
        description = f"image folder {os.path.abspath(src)}; classes {classes}"
        class_indexing = classes  # sorted folder names -> 0, 1, ... (the labels written)
        if max_size is None and quality is None:  # bytes as stored: read and write by columns
            chunks = folder_chunks(src, paths, labels, workers or available_cpus(), file_names, cap)
            return write_chunks(
                dst,
                shards,
                overwrite,
                image_schema,
                chunks,
                len(paths),
                progress,
                description,
                storage_options,
                class_indexing,
            )
        data = GeneratorDataset(
            ImageFiles(src, paths, labels, names=file_names, max_file_size=cap, raise_it=RAISE_CAP),
            list(image_schema),
            shuffle=False,
            num_parallel_workers=workers or 1,
        )
        data = data.map(reencoder(max_size, quality or 90), "image", num_parallel_workers=workers)
        schema = image_schema
    elif src.endswith((".npz", ".npy")):
        arrays = load_arrays(src)
        if not arrays:
            raise ValueError(f"convert: '{src}' holds no arrays")
        if len({len(a) for a in arrays.values()}) != 1:
            raise ValueError(f"convert: the arrays in '{src}' differ in length")
        schema = {k: field_of(k, v[0]) for k, v in arrays.items()}
        n = len(next(iter(arrays.values())))
        return write_chunks(
            dst,
            shards,
            overwrite,
            schema,
            array_chunks(arrays),
            n,
            progress,
            f"NumPy arrays from {os.path.abspath(src)}",
            storage_options,
        )
    elif (
        is_url(src)
        or is_mindrecord(src)
        or os.path.exists(src)
        or os.path.exists(src + ".manifest.json")
    ):
        data = RecordDataset(
            src,
            shuffle=False,
            num_parallel_workers=workers,
            storage_options=storage_options if is_url(src) else None,
        )
        schema = {f.name: f.to_dict() for f in data.reader.fields}
        description = f"converted from {src if is_url(src) else os.path.abspath(src)}"
    else:
        raise FileNotFoundError(
            f"convert: '{src}' is not an image folder, a .npz/.npy file, "
            "MindRecord files or a jisu record data set"
        )
    return write_dataset(
        data, dst, shards, overwrite, schema, progress, description, storage_options, class_indexing
    )
