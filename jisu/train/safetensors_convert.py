"""MindSpore 2.10's ``ckpt_to_safetensors`` and ``safetensors_to_ckpt``: convert checkpoint
files, or the ``rank*`` folders of a distributed run, between MindSpore's ``.ckpt`` format
(:mod:`jisu.train.ms_checkpoint`) and ``.safetensors`` (:mod:`jisu.train.safetensors_format`),
with MindSpore's arguments, output names and errors."""

from __future__ import annotations

import os
import re
from collections import OrderedDict

import torch

from ..dataset.record.validate import open_regular
from ..files import atomic_write
from . import ms_checkpoint
from .safetensors_format import _name_problem, read_safetensors, write_safetensors

__all__ = ["ckpt_to_safetensors", "safetensors_to_ckpt"]


def ckpt_to_safetensors(
    file_path: str,
    save_path: str | None = None,
    name_map: dict[str, str] | None = None,
    file_name_regex: str | None = None,
    processes_num: int = 1,
) -> None:
    """Convert MindSpore ``.ckpt`` files to ``.safetensors`` files, as MindSpore 2.10 does.

    ``file_path`` is one ``.ckpt`` file, or a folder whose ``rank*`` folders hold them (each
    converted into the same ``rank*`` folder under ``save_path``). Each output is named like its
    input, in ``save_path`` (made when missing) or beside the input. jisu converts the files
    one after another in this process: ``processes_num`` is checked, otherwise ignored.

    Args:
        file_path: a ``.ckpt`` file or a folder of ``rank*`` folders.
        save_path: the output folder (``None``: beside each input).
        name_map: old name -> new name, for the names to rename.
        file_name_regex: convert only files whose name (a folder's files) or path (one file)
            it matches (``re.search``).
        processes_num: MindSpore's worker-process count (a positive int).

    Raises:
        ValueError: ``file_path`` is neither a file nor a folder, the file is not a ``.ckpt``
            or does not match ``file_name_regex``, ``save_path`` has a suffix, a folder has no
            ``rank*`` folder, a checkpoint holds a str (safetensors holds tensors only) or no
            entry, ``name_map`` is not a dict (MindSpore's error type) or gives two entries one
            name, or ``processes_num`` is not a positive int (all MindSpore's error type).
        MalformedFileError: a checkpoint is malformed.
    """
    _convert(file_path, save_path, name_map, file_name_regex, processes_num, "ckpt_to_safetensors")


def safetensors_to_ckpt(
    file_path: str,
    save_path: str | None = None,
    name_map: dict[str, str] | None = None,
    file_name_regex: str | None = None,
    processes_num: int = 1,
) -> None:
    """Convert ``.safetensors`` files to MindSpore ``.ckpt`` files, as MindSpore 2.10 does;
    the arguments and errors are :func:`ckpt_to_safetensors`'s, with the suffixes swapped.
    The ``.ckpt`` holds the entries in name order, without a CRC trailer."""
    _convert(file_path, save_path, name_map, file_name_regex, processes_num, "safetensors_to_ckpt")


_SUFFIXES = {
    "ckpt_to_safetensors": (".ckpt", ".safetensors"),
    "safetensors_to_ckpt": (".safetensors", ".ckpt"),
}


def _convert(file_path, save_path, name_map, file_name_regex, processes_num, func: str) -> None:
    src_suffix, dst_suffix = _SUFFIXES[func]
    file_path = os.fspath(file_path)
    is_dir, is_file = os.path.isdir(file_path), os.path.isfile(file_path)
    save_path = None if save_path is None else os.fspath(save_path)
    if not is_dir and not is_file:  # MindSpore raises ValueError for each of these
        _refuse(func, "file_path must be a file or a folder", file_path)
    if save_path and os.path.splitext(save_path)[1]:
        _refuse(func, "save_path must be a folder", save_path)
    if name_map is not None and not isinstance(name_map, dict):
        _refuse(func, "name_map must be a dict", type(name_map).__name__)
    if isinstance(processes_num, bool) or not isinstance(processes_num, int) or processes_num < 1:
        _refuse(func, "processes_num must be a positive int", processes_num)
    if file_name_regex is not None and not isinstance(file_name_regex, str):
        _refuse(func, "file_name_regex must be a str", file_name_regex)
    if is_file and not file_path.endswith(src_suffix):
        _refuse(func, f"the file must be a {src_suffix} file", file_path)
    if is_file and file_name_regex is not None and not re.search(file_name_regex, file_path):
        _refuse(func, f"the file does not match file_name_regex={file_name_regex!r}", file_path)
    tasks: list[tuple[str, str]] = []
    if is_file:
        folder = save_path or os.path.dirname(os.path.abspath(file_path))
        tasks.append((file_path, os.path.join(folder, _renamed(file_path, src_suffix, dst_suffix))))
    else:
        ranks = sorted(
            d
            for d in os.listdir(file_path)
            if d.startswith("rank") and os.path.isdir(os.path.join(file_path, d))
        )
        if not ranks:
            raise ValueError(f"{func}: no folder whose name starts with 'rank' in {file_path!r}")
        for rank in ranks:
            folder = os.path.join(file_path, rank)
            out = os.path.join(save_path, rank) if save_path is not None else folder
            for name in sorted(os.listdir(folder)):
                if not name.endswith(src_suffix):
                    continue
                if file_name_regex is None or re.search(file_name_regex, name):
                    dst = os.path.join(out, _renamed(name, src_suffix, dst_suffix))
                    tasks.append((os.path.join(folder, name), dst))
    for src, dst in tasks:
        _convert_file(src, dst, name_map, func)


def _refuse(func: str, what: str, received: object) -> None:
    raise ValueError(f"{func}: {what}. Received: {received!r}")


def _renamed(path: str, src_suffix: str, dst_suffix: str) -> str:
    return os.path.basename(path)[: -len(src_suffix)] + dst_suffix


def _convert_file(src: str, dst: str, name_map: dict[str, str] | None, func: str) -> None:
    entries = _read_ckpt(src) if func == "ckpt_to_safetensors" else read_safetensors(src)
    if not entries:
        raise ValueError(f"{func}: '{src}' holds no entry (MindSpore refuses an empty one too)")
    items: dict[str, torch.Tensor | str] = {}
    for name, value in entries.items():
        new = name_map.get(name, name) if name_map else name
        if new in items:
            raise ValueError(f"{func}: name_map gives two entries of '{src}' the name {new!r}")
        items[new] = value
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    if func == "ckpt_to_safetensors":
        strings = [name for name, value in items.items() if isinstance(value, str)]
        if strings:
            raise ValueError(
                f"{func}: '{src}' holds the str entries {strings}; a safetensors file holds "
                "tensors only (MindSpore's conversion fails on them too)"
            )
        write_safetensors(dst, items.items())
    else:
        for name in items:
            if not isinstance(name, str) or _name_problem(name):
                raise ValueError(f"{func}: name_map gives an entry the name {name!r}")
        with atomic_write(dst) as f:
            ms_checkpoint.write_ckpt(f, items.items())


def _read_ckpt(path: str) -> OrderedDict[str, torch.Tensor | str]:
    fd = open_regular(path)
    try:
        head = os.read(fd, 4)
    finally:
        os.close(fd)
    if head.startswith(b"PK"):
        raise ValueError(
            f"ckpt_to_safetensors: '{path}' is jisu's earlier checkpoint format (a zip), not "
            "MindSpore's: load it with jisu.load_checkpoint and save it again first"
        )
    return ms_checkpoint.read_ckpt(path)
