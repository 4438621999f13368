"""``jisu.dataset.text`` against MindSpore 2.10's recorded outputs
(tests/fixtures/ms_text/text.json, written by make_fixtures.py there)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jisu
import jisu.dataset as ds
from jisu.dataset import text, transforms

FIXTURE = json.loads(
    (Path(__file__).parents[2] / "fixtures/ms_text/text.json").read_text(encoding="utf-8")
)


def _plain(value):
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


WORDS = ["the", "cat", "sat", "on", "mat"]
VOCAB = text.Vocab.from_list(WORDS, ["<pad>", "<unk>"], True)
LOOKUP_VOCAB = text.Vocab.from_list(["hello", "world", "<unk>"])
SENTENCE = np.array(["hello", "big", "world"])
WS = "  Welcome to\tBeijing!\n  北京 欢迎您  "
BERT_VOCAB = text.Vocab.from_list(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un", "##aff", "##able",
     "play", "##ing", "北", "京", ",", "!", "the", "a"]
)  # fmt: skip
BERT_IN = " Hello, WORLD! unaffable playing 北京\tthé  A[UNK]"

CASES = {
    "from_list": lambda: text.Vocab.from_list(WORDS).vocab(),
    "from_list_special_first": lambda: text.Vocab.from_list(WORDS, ["<pad>", "<unk>"]).vocab(),
    "from_list_special_last": lambda: text.Vocab.from_list(
        WORDS, ["<pad>", "<unk>"], False
    ).vocab(),
    "from_list_duplicate": lambda: text.Vocab.from_list(["a", "b", "a"]),
    "from_list_special_in_words": lambda: text.Vocab.from_list(["a", "<unk>"], ["<unk>"]),
    "from_list_special_duplicate": lambda: text.Vocab.from_list(["a"], ["<unk>", "<unk>"]),
    "tokens_to_ids": lambda: VOCAB.tokens_to_ids(["cat", "dog", "the"]),
    "tokens_to_ids_str": lambda: VOCAB.tokens_to_ids("mat"),
    "tokens_to_ids_unknown_str": lambda: VOCAB.tokens_to_ids("dog"),
    "tokens_to_ids_array": lambda: VOCAB.tokens_to_ids(np.array(["sat", "on"])),
    "ids_to_tokens": lambda: VOCAB.ids_to_tokens([0, 3, 6, 99]),
    "ids_to_tokens_int": lambda: VOCAB.ids_to_tokens(2),
    "ids_to_tokens_negative": lambda: VOCAB.ids_to_tokens([-1]),
    "from_dict": lambda: text.Vocab.from_dict({"home": 3, "behind": 2, "the": 4}).vocab(),
    "from_dict_ids": lambda: text.Vocab.from_dict({"home": 3, "the": 5}).ids_to_tokens([3, 4, 5]),
    "from_dict_negative": lambda: text.Vocab.from_dict({"home": -1}),
    "lookup_unknown": lambda: text.Lookup(LOOKUP_VOCAB, "<unk>")(SENTENCE),
    "lookup_int64": lambda: text.Lookup(LOOKUP_VOCAB, "<unk>", jisu.int64)(SENTENCE),
    "lookup_no_unknown": lambda: text.Lookup(LOOKUP_VOCAB)(np.array(["world", "hello"])),
    "lookup_missing": lambda: text.Lookup(LOOKUP_VOCAB)(SENTENCE),
    "lookup_bad_unknown": lambda: text.Lookup(LOOKUP_VOCAB, "<oov>"),
    "lookup_scalar": lambda: text.Lookup(LOOKUP_VOCAB, "<unk>")("world"),
    "lookup_2d": lambda: text.Lookup(LOOKUP_VOCAB, "<unk>")(
        np.array([["hello", "x"], ["world", "hello"]])
    ),
    "lookup_float": lambda: text.Lookup(LOOKUP_VOCAB, "<unk>", jisu.float32)(SENTENCE),
    "whitespace": lambda: text.WhitespaceTokenizer()(WS),
    "whitespace_offsets": lambda: text.WhitespaceTokenizer(with_offsets=True)(WS),
    "whitespace_empty": lambda: text.WhitespaceTokenizer()("   "),
    "whitespace_array": lambda: text.WhitespaceTokenizer()(np.array(["a b", "c"])),
    "unicode_char": lambda: text.UnicodeCharTokenizer()("北京 ab"),
    "unicode_char_offsets": lambda: text.UnicodeCharTokenizer(True)("北京 ab"),
    "regex": lambda: text.RegexTokenizer(r"\s+")("Welcome  to Shenzhen"),
    "regex_keep": lambda: text.RegexTokenizer(r"\s+", r"\s+")("Welcome  to Shenzhen"),
    "regex_punct": lambda: text.RegexTokenizer(r"[,.!]", r"[,.!]", True)("Hi, you.Go!"),
    "regex_keep_partial": lambda: text.RegexTokenizer(r"[,.] ?", r"[,.]")("a, b.c"),
    "to_number_int": lambda: text.ToNumber(jisu.int32)(np.array(["1", "-22", "+3"])),
    "to_number_float": lambda: text.ToNumber(jisu.float32)(np.array(["1.5", "-2", "3e2"])),
    "to_number_uint8_overflow": lambda: text.ToNumber(jisu.uint8)(np.array(["300"])),
    "to_number_bad": lambda: text.ToNumber(jisu.int32)(np.array(["1.5"])),
    "to_number_bad_word": lambda: text.ToNumber(jisu.float64)(np.array(["abc"])),
    "to_number_bool_type": lambda: text.ToNumber(jisu.bool_),
    "truncate": lambda: text.Truncate(3)(np.array(["a", "b", "c", "d"])),
    "truncate_short": lambda: text.Truncate(3)(np.array([1, 2])),
    "truncate_pair": lambda: text.TruncateSequencePair(5)(
        np.array([1, 2, 3, 4]), np.array([5, 6, 7, 8, 9, 10])
    ),
    "truncate_pair_short": lambda: text.TruncateSequencePair(4)(
        np.array([1, 2, 3, 4, 5, 6]), np.array([7])
    ),
    "sliding_window": lambda: text.SlidingWindow(3, 0)(np.array([1, 2, 3, 4, 5])),
    "sliding_window_long": lambda: text.SlidingWindow(6)(np.array([1, 2, 3])),
    "ngram": lambda: text.Ngram(2)(np.array(["WildRose", "Country"])),
    "ngram_list": lambda: text.Ngram([2, 3], ("_", 2), ("_", 2), " ")(
        np.array(["WildRose", "Country"])
    ),
    "ngram_long": lambda: text.Ngram(3)(np.array(["a", "b"])),
    "add_token_begin": lambda: text.AddToken("TOKEN", True)(np.array(["a", "b"])),
    "add_token_end": lambda: text.AddToken("END", False)(np.array(["a", "b"])),
    "to_str": lambda: text.to_str(np.array([b"ab", "北".encode()])),
    "to_bytes": lambda: [x.decode() for x in text.to_bytes(np.array(["ab", "c"])).tolist()],
    "pad_end_strings": lambda: transforms.PadEnd([4], "<pad>")(np.array(["a", "b"])),
    "basic": lambda: text.BasicTokenizer()(BERT_IN),
    "basic_lower": lambda: text.BasicTokenizer(lower_case=True)(BERT_IN),
    "basic_lower_keep_ws": lambda: text.BasicTokenizer(lower_case=True, keep_whitespace=True)(
        BERT_IN
    ),
    "basic_no_special": lambda: text.BasicTokenizer(lower_case=True, preserve_unused_token=False)(
        BERT_IN
    ),
    "wordpiece": lambda: text.WordpieceTokenizer(BERT_VOCAB)(
        np.array(["unaffable", "playing", "xyz", "hello"])
    ),
    "bert": lambda: text.BertTokenizer(BERT_VOCAB, lower_case=True)(BERT_IN),
    "bert_cased": lambda: text.BertTokenizer(BERT_VOCAB)(BERT_IN),
    "bert_unk": lambda: text.BertTokenizer(BERT_VOCAB, unknown_token="")("playing xyz"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_op_gives_mindspores_output(name):
    want = FIXTURE[name]
    if "error" in want:  # MindSpore's RuntimeError is jisu's ValueError or TypeError
        with pytest.raises((ValueError, TypeError)):
            CASES[name]()
        return
    assert _plain(CASES[name]()) == want["out"]


def test_every_recorded_case_is_checked():
    recorded = {k for k in FIXTURE if not k.startswith(("from_dataset", "from_file"))}
    assert recorded - {"pipeline", "pipeline_bert"} == set(CASES)


def _corpus(columns=("text",)):
    corpus = ["b a c a", "d b a", "e c b e", "f", "c c"]

    def gen():
        for line in corpus:
            yield tuple(np.array(line.split(" ")) for _ in columns)

    return ds.GeneratorDataset(gen, column_names=list(columns), shuffle=False)


def _lines(lines):
    def gen():
        for line in lines:
            yield (np.array(line.split(" ")),)

    return ds.GeneratorDataset(gen, column_names=["text"], shuffle=False)


FROM_DATASET = {
    "from_dataset": lambda: text.Vocab.from_dataset(_corpus(), "text"),
    "from_dataset_special": lambda: text.Vocab.from_dataset(
        _corpus(), None, None, None, ["<pad>", "<unk>"], True
    ),
    "from_dataset_special_last": lambda: text.Vocab.from_dataset(
        _corpus(), ["text"], None, None, ["<unk>"], False
    ),
    "from_dataset_top_k": lambda: text.Vocab.from_dataset(_corpus(), top_k=3),
    "from_dataset_top_k_tie": lambda: text.Vocab.from_dataset(_corpus(), top_k=2),
    "from_dataset_freq_range": lambda: text.Vocab.from_dataset(_corpus(), freq_range=(2, 3)),
    "from_dataset_freq_none_min": lambda: text.Vocab.from_dataset(_corpus(), freq_range=(None, 2)),
    "from_dataset_freq_and_top_k": lambda: text.Vocab.from_dataset(
        _corpus(), freq_range=(2, None), top_k=2
    ),
    "from_dataset_two_columns": lambda: text.Vocab.from_dataset(_corpus(("x", "y")), ["x", "y"]),
    "from_dataset_top_k_zero": lambda: text.Vocab.from_dataset(_corpus(), top_k=0),
    "from_dataset_ties": lambda: text.Vocab.from_dataset(_lines(["z y x", "Z b B a", "é e 10 9"])),
}


@pytest.mark.parametrize("name", sorted(FROM_DATASET))
def test_vocab_from_dataset_orders_as_mindspore(name):
    """Most frequent first, ties alphabetically; freq_range, then top_k; specials."""
    want = FIXTURE[name]
    if "error" in want:
        with pytest.raises(ValueError):
            FROM_DATASET[name]()
        return
    assert FROM_DATASET[name]().vocab() == want["out"]


@pytest.fixture
def vocab_files(tmp_path):
    with_delimiter = tmp_path / "vocab.txt"
    with_delimiter.write_text("apple,apple2\nbanana, 333\ncat,00\n\ndog\napple,again\n")
    plain = tmp_path / "plain.txt"
    plain.write_text("[PAD]\n[UNK]\nhello\nworld\n##s\n")
    return str(with_delimiter), str(plain)


def test_vocab_from_file_as_mindspore(vocab_files):
    path, plain = vocab_files
    for name, build in {
        "from_file_delimiter": lambda: text.Vocab.from_file(path, ",", None, ["<pad>", "<unk>"]),
        "from_file_vocab_size": lambda: text.Vocab.from_file(path, ",", 2),
        "from_file_special_last": lambda: text.Vocab.from_file(path, ",", 3, ["<unk>"], False),
        "from_file_plain": lambda: text.Vocab.from_file(plain),
        "from_file_special_clash": lambda: text.Vocab.from_file(plain, special_tokens=["[UNK]"]),
    }.items():
        want = FIXTURE[name]
        if "error" in want:
            with pytest.raises(ValueError):
                build()
        else:
            assert build().vocab() == want["out"], name


def test_pipeline_tokenize_lookup_pad_batch_gives_mindspores_rows():
    sentences = ["the cat sat", "a dog sat on the mat", "cat"]

    def gen():
        for s in sentences:
            yield (np.array(s),)

    vocab = text.Vocab.from_list(["the", "cat", "sat", "on", "mat"], ["<pad>", "<unk>"], True)
    data = ds.GeneratorDataset(gen, column_names=["text"], shuffle=False)
    data = data.map(text.WhitespaceTokenizer(), input_columns="text")
    data = data.map(text.Lookup(vocab, "<unk>"), input_columns="text")
    data = data.map(transforms.PadEnd([5], 0), input_columns="text")
    data = data.batch(2)
    rows = data.create_dict_iterator(num_epochs=1, output_numpy=True)
    rows = [_plain(row["text"]) for row in rows]
    assert rows == FIXTURE["pipeline"]["out"]


def test_the_zoos_bert_sentence_pair_pipeline_gives_mindspores_batch():
    """official/nlp/Bert/src/finetune_data_preprocess.py's steps, on two sentence pairs."""
    pairs = [("Hello, world!", "unaffable playing", "yes"), ("the 北京", "A hello", "no")]

    def gen():
        for a, b, label in pairs:
            yield np.array(a), np.array(b), np.array(label)

    max_seq_len = 10
    data = ds.GeneratorDataset(gen, ["sentence1", "sentence2", "label"], shuffle=False)
    label_lookup = text.Lookup(text.Vocab.from_list(["no", "yes"]))
    data = data.map(operations=label_lookup, input_columns="label", output_columns="label_id")
    tokenizer = text.BertTokenizer(BERT_VOCAB, lower_case=True)
    lookup = text.Lookup(BERT_VOCAB, unknown_token="[UNK]")
    data = data.map(operations=tokenizer, input_columns=["sentence1"])
    data = data.map(operations=tokenizer, input_columns=["sentence2"])
    data = data.map(
        operations=text.TruncateSequencePair(max_seq_len - 3),
        input_columns=["sentence1", "sentence2"],
    )
    data = data.map(
        operations=transforms.Concatenate(prepend=np.array(["[CLS]"]), append=np.array(["[SEP]"])),
        input_columns=["sentence1"],
    )
    data = data.map(
        operations=transforms.Concatenate(append=np.array(["[SEP]"])), input_columns=["sentence2"]
    )
    data = data.map(
        operations=transforms.Duplicate(),
        input_columns=["sentence1"],
        output_columns=["sentence1", "type_sentence1"],
    )
    data = data.project(["sentence1", "type_sentence1", "sentence2", "label_id"])
    data = data.map(
        operations=transforms.Duplicate(),
        input_columns=["sentence2"],
        output_columns=["sentence2", "type_sentence2"],
    )
    data = data.project(["sentence1", "type_sentence1", "sentence2", "type_sentence2", "label_id"])
    data = data.map(operations=[lookup, transforms.Fill(0)], input_columns=["type_sentence1"])
    data = data.map(operations=[lookup, transforms.Fill(1)], input_columns=["type_sentence2"])
    data = data.map(
        operations=transforms.Concatenate(),
        input_columns=["type_sentence1", "type_sentence2"],
        output_columns=["segment_ids"],
    )
    data = data.project(["sentence1", "sentence2", "segment_ids", "label_id"])
    data = data.map(operations=transforms.PadEnd([max_seq_len], 0), input_columns=["segment_ids"])
    data = data.map(
        operations=transforms.Concatenate(),
        input_columns=["sentence1", "sentence2"],
        output_columns=["text_ids"],
    )
    data = data.project(["text_ids", "segment_ids", "label_id"])
    data = data.map(operations=lookup, input_columns=["text_ids"])
    data = data.map(operations=transforms.PadEnd([max_seq_len], 0), input_columns=["text_ids"])
    data = data.map(
        operations=transforms.Duplicate(),
        input_columns=["text_ids"],
        output_columns=["text_ids", "mask_ids"],
    )
    data = data.project(["text_ids", "mask_ids", "segment_ids", "label_id"])
    data = data.map(
        operations=transforms.Mask(transforms.Relational.NE, 0, jisu.int32),
        input_columns=["mask_ids"],
    )
    rows = data.batch(2).create_dict_iterator(num_epochs=1, output_numpy=True)
    got = [{k: _plain(v) for k, v in row.items()} for row in rows]
    assert got == FIXTURE["pipeline_bert"]["out"]


def test_text_file_pipeline_with_offsets_into_three_columns(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("a bb\nccc\n")
    data = ds.TextFileDataset(str(path), shuffle=False)
    data = data.map(
        text.WhitespaceTokenizer(with_offsets=True),
        input_columns="text",
        output_columns=["token", "start", "end"],
    )
    rows = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert [r[0].tolist() for r in rows] == [["a", "bb"], ["ccc"]]
    assert [r[1].tolist() for r in rows] == [[0, 2], [0]]
    assert [r[2].tolist() for r in rows] == [[1, 4], [3]]


def test_ops_check_their_arguments():
    with pytest.raises(TypeError, match="Lookup: vocab"):
        text.Lookup(["a"])
    with pytest.raises(ValueError, match="Truncate: max_seq_len"):
        text.Truncate(0)
    with pytest.raises(TypeError, match="WhitespaceTokenizer: with_offsets"):
        text.WhitespaceTokenizer(with_offsets=1)
    with pytest.raises(TypeError, match="Ngram: left_pad"):
        text.Ngram(2, left_pad=("_",))
    with pytest.raises(TypeError, match=r"Vocab\.from_list: word_list"):
        text.Vocab.from_list("abc")
    assert text.PythonTokenizer(str.split)("a b").tolist() == ["a", "b"]
