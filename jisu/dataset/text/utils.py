"""MindSpore's ``mindspore.dataset.text.utils``: ``Vocab`` (token <-> id), ``to_str``,
``to_bytes``, and the word-vector tables of :mod:`.vectors` under MindSpore's path.

A ``Vocab`` maps each token to an id: built from a list (ids in list order), a dict, a file (one
token per line, the text before ``delimiter``) or a data set (tokens counted over its columns,
ordered by descending count, ties alphabetically, as MindSpore 2.10 orders them). Special
tokens go first (ids 0, 1, ...) or last. A token given twice is an error, as in MindSpore.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import numpy as np

from .vectors import CharNGram, FastText, GloVe, Vectors

__all__ = ["CharNGram", "FastText", "GloVe", "Vectors", "Vocab", "to_bytes", "to_str"]


def _str_list(owner: str, name: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{owner}: {name} must be a list of str. Received {name}={value!r}")
    seen: set[str] = set()
    for word in value:
        if word in seen:
            raise ValueError(f"{owner}: {name} contains duplicate word: {word}")
        seen.add(word)
    return list(value)


def _check_bool(owner: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool. Received {name}={value!r}")
    return value


def _as_str(token: Any) -> str:
    return token.decode("utf-8") if isinstance(token, bytes) else str(token)


class Vocab:
    """Tokens and their ids (MindSpore's ``text.Vocab``); build one with a ``from_*``
    class method."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._tokens: dict[int, str] = {}

    @classmethod
    def _of(cls, ids: dict[str, int]) -> Vocab:
        vocab = cls()
        vocab._ids = ids
        vocab._tokens = {i: word for word, i in ids.items()}
        return vocab

    @classmethod
    def _with_specials(
        cls, owner: str, words: list[str], special_tokens: Any, special_first: Any
    ) -> Vocab:
        specials = _str_list(owner, "special_tokens", special_tokens)
        _check_bool(owner, "special_first", special_first)
        clash = set(specials) & set(words)
        if clash:
            raise ValueError(
                f"{owner}: special_tokens and the vocabulary's words share {sorted(clash)}"
            )
        ordered = specials + words if special_first else words + specials
        return cls._of({word: i for i, word in enumerate(ordered)})

    @classmethod
    def from_list(
        cls, word_list: list[str], special_tokens: list[str] | None = None,
        special_first: bool = True,
    ) -> Vocab:  # fmt: skip
        """The words of ``word_list`` get ids in order (after or before ``special_tokens``)."""
        words = _str_list("Vocab.from_list", "word_list", word_list)
        return cls._with_specials("Vocab.from_list", words, special_tokens, special_first)

    @classmethod
    def from_dict(cls, word_dict: dict[str, int]) -> Vocab:
        """The given token -> id mapping (ids >= 0; gaps allowed)."""
        if not isinstance(word_dict, dict):
            raise TypeError(f"Vocab.from_dict: word_dict must be a dict. Received {word_dict!r}")
        for word, i in word_dict.items():
            if not isinstance(word, str) or isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(
                    f"Vocab.from_dict: word_dict must map str to int. Received {word!r}: {i!r}"
                )
            if i < 0:
                raise ValueError(f"Vocab.from_dict: ids must be >= 0. Received {word!r}: {i}")
        return cls._of(dict(word_dict))

    @classmethod
    def from_file(
        cls, file_path: str, delimiter: str = "", vocab_size: int | None = None,
        special_tokens: list[str] | None = None, special_first: bool = True,
    ) -> Vocab:  # fmt: skip
        """One token per line: the line, or its text before ``delimiter``; the first
        ``vocab_size`` lines (None: all)."""
        owner = "Vocab.from_file"
        if not isinstance(file_path, (str, os.PathLike)):
            raise TypeError(f"{owner}: file_path must be a str. Received {file_path!r}")
        if not isinstance(delimiter, str):
            raise TypeError(f"{owner}: delimiter must be a str. Received {delimiter!r}")
        if vocab_size is not None and (
            isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size <= 0
        ):
            raise ValueError(f"{owner}: vocab_size must be an int > 0. Received {vocab_size!r}")
        words: list[str] = []
        seen: set[str] = set()
        with open(file_path, encoding="utf-8") as file:
            for line in file:
                if vocab_size is not None and len(words) == vocab_size:
                    break
                word = line.rstrip("\r\n")
                if delimiter:
                    word = word.split(delimiter, 1)[0]
                if word in seen:
                    raise ValueError(f"{owner}: duplicate word {word!r} in {file_path}")
                seen.add(word)
                words.append(word)
        return cls._with_specials(owner, words, special_tokens, special_first)

    @classmethod
    def from_dataset(
        cls, dataset: Any, columns: str | list[str] | None = None,
        freq_range: tuple[int | None, int | None] | None = None, top_k: int | None = None,
        special_tokens: list[str] | None = None, special_first: bool = True,
    ) -> Vocab:  # fmt: skip
        """The tokens of ``columns`` (None: all) of one epoch of ``dataset``, most frequent
        first (ties in alphabetical order), kept when their count is within ``freq_range``
        (min, max; None: no bound), then the ``top_k`` first."""
        owner = "Vocab.from_dataset"
        if isinstance(columns, str):
            columns = [columns]
        if columns is not None:
            columns = _str_list(owner, "columns", columns)
        low, high = _freq_range(owner, freq_range)
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)):
            raise TypeError(f"{owner}: top_k must be an int. Received top_k={top_k!r}")
        if top_k is not None and top_k <= 0:
            raise ValueError(f"{owner}: top_k must be greater than 0. Received top_k={top_k}")
        counts: Counter[str] = Counter()
        for row in dataset.create_tuple_iterator(columns, num_epochs=1, output_numpy=True):
            for value in row:
                counts.update(_as_str(t) for t in np.asarray(value).reshape(-1).tolist())
        kept = [
            (word, n) for word, n in counts.items()
            if (low is None or n >= low) and (high is None or n <= high)
        ]  # fmt: skip
        kept.sort(key=lambda item: (-item[1], item[0]))
        words = [word for word, _ in kept[:top_k]]
        return cls._with_specials(owner, words, special_tokens, special_first)

    def vocab(self) -> dict[str, int]:
        """The token -> id dict."""
        return dict(self._ids)

    def tokens_to_ids(self, tokens: str | list[str] | np.ndarray) -> int | list[int]:
        """The id of each token (-1 for a token not in the vocabulary); one int for one str.
        A token that is no str (bytes are read as UTF-8) is a TypeError, as MindSpore's."""
        if isinstance(tokens, np.ndarray):
            tokens = tokens.tolist()
        if isinstance(tokens, (str, bytes)):
            return self._ids.get(_as_str(tokens), -1)
        if not isinstance(tokens, (list, tuple)):
            raise TypeError(
                f"Vocab.tokens_to_ids: tokens must be a str, a list of str or an array. "
                f"Received {type(tokens).__name__}"
            )
        for token in tokens:
            if not isinstance(token, (str, bytes)):
                raise TypeError(f"Vocab.tokens_to_ids: tokens must be str. Received {token!r}")
        return [self._ids.get(_as_str(t), -1) for t in tokens]

    def ids_to_tokens(self, ids: int | list[int] | np.ndarray) -> str | list[str]:
        """The token of each id ("" for an id not in the vocabulary); one str for one int."""
        if isinstance(ids, np.ndarray):
            ids = ids.tolist()
        single = isinstance(ids, int)
        values = [ids] if single else ids
        if not isinstance(values, (list, tuple)) or any(
            isinstance(i, bool) or not isinstance(i, int) for i in values
        ):
            raise TypeError(f"Vocab.ids_to_tokens: ids must be ints. Received {ids!r}")
        if any(i < 0 for i in values):
            raise ValueError(f"Vocab.ids_to_tokens: ids must be >= 0. Received {ids!r}")
        tokens = [self._tokens.get(i, "") for i in values]
        return tokens[0] if single else tokens

    def __contains__(self, token: str) -> bool:
        return token in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def _id(self, token: str) -> int | None:
        return self._ids.get(token)


def _freq_range(owner: str, freq_range: Any) -> tuple[int | None, int | None]:
    if freq_range is None:
        return None, None
    if not isinstance(freq_range, (tuple, list)) or len(freq_range) != 2:
        raise TypeError(f"{owner}: freq_range must be a (min, max) tuple. Received {freq_range!r}")
    for bound in freq_range:
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise TypeError(f"{owner}: freq_range must hold ints or None. Received {freq_range!r}")
        if bound is not None and bound < 0:
            raise ValueError(f"{owner}: freq_range must not be negative. Received {freq_range!r}")
    return freq_range[0], freq_range[1]


def to_str(array: np.ndarray, encoding: str = "utf8") -> np.ndarray:
    """A NumPy array of bytes decoded to str."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"to_str: array must be a NumPy array. Received {type(array).__name__}")
    return np.char.decode(array, encoding)


def to_bytes(array: np.ndarray, encoding: str = "utf8") -> np.ndarray:
    """A NumPy array of str encoded to bytes."""
    if not isinstance(array, np.ndarray):
        raise ValueError(f"to_bytes: array must be a NumPy array. Received {type(array).__name__}")
    return np.char.encode(array, encoding)
