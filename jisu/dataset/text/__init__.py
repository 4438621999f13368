"""MindSpore's ``mindspore.dataset.text``: vocabularies, tokenizers and text ops on NumPy
arrays of strings, for ``dataset.map`` and eager calls.

``Vocab`` (``from_list``, ``from_dict``, ``from_file``, ``from_dataset``), ``Lookup``,
``ToNumber``, ``Truncate``, ``TruncateSequencePair``, ``SlidingWindow``, ``Ngram``,
``AddToken``, ``CaseFold``, ``NormalizeUTF8``, ``RegexReplace``, the tokenizers
(``WhitespaceTokenizer``, ``UnicodeCharTokenizer``, ``UnicodeScriptTokenizer``,
``RegexTokenizer``, ``BasicTokenizer``, ``WordpieceTokenizer``, ``BertTokenizer``,
``PythonTokenizer``), ``FilterWikipediaXML``, the word-vector tables (``Vectors``,
``GloVe``, ``FastText``, ``CharNGram``) and ``ToVectors``, ``to_str`` and ``to_bytes``.
Padding is MindSpore 2.x's ``jisu.dataset.transforms.PadEnd``.
"""

from . import transforms, utils
from .normalizers import CaseFold, FilterWikipediaXML, NormalizeUTF8, RegexReplace
from .tokenizers import NormalizeForm, UnicodeScriptTokenizer
from .transforms import (
    AddToken,
    BasicTokenizer,
    BertTokenizer,
    Lookup,
    Ngram,
    PythonTokenizer,
    RegexTokenizer,
    SlidingWindow,
    ToNumber,
    Truncate,
    TruncateSequencePair,
    UnicodeCharTokenizer,
    WhitespaceTokenizer,
    WordpieceTokenizer,
)
from .utils import Vocab, to_bytes, to_str
from .vectors import CharNGram, FastText, GloVe, ToVectors, Vectors

__all__ = [
    "AddToken",
    "BasicTokenizer",
    "BertTokenizer",
    "CaseFold",
    "CharNGram",
    "FastText",
    "FilterWikipediaXML",
    "GloVe",
    "Lookup",
    "Ngram",
    "NormalizeForm",
    "NormalizeUTF8",
    "PythonTokenizer",
    "RegexReplace",
    "RegexTokenizer",
    "SlidingWindow",
    "ToNumber",
    "ToVectors",
    "Truncate",
    "TruncateSequencePair",
    "UnicodeCharTokenizer",
    "UnicodeScriptTokenizer",
    "Vectors",
    "Vocab",
    "WhitespaceTokenizer",
    "WordpieceTokenizer",
    "to_bytes",
    "to_str",
    "transforms",
    "utils",
]
