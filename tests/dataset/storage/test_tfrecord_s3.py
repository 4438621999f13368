"""TFRecordDataset over s3:// (moto's server over HTTP) reads what MindSpore read from the same
files (the fixtures of tests/dataset/sources/test_tfrecord.py), plain and gzip-compressed."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from jisu.dataset.sources.tfrecord import TFRecordDataset

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tfrecord"


def rows(data) -> list[list]:
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    return [[np.asarray(c).tolist() for c in row] for row in it]


def test_tfrecord_files_in_s3_read_as_locally(s3, tmp_path):
    fs = s3.fs()
    for name in ("a", "b"):
        fs.put_file(str(FIXTURES / f"{name}.tfrecord"), f"{s3.bucket}/tf/{name}.tfrecord")
        packed = gzip.compress((FIXTURES / f"{name}.tfrecord").read_bytes())
        fs.pipe_file(f"{s3.bucket}/gz/{name}.tfrecord.gz", packed)
    local = TFRecordDataset(str(FIXTURES / "?.tfrecord"), columns_list=["label"], shuffle=False)
    want = [[[i]] for i in range(6)] + [[[100 + i]] for i in range(3)]  # as MindSpore read
    assert rows(local) == want
    remote = TFRecordDataset(
        f"s3://{s3.bucket}/tf/?.tfrecord", columns_list=["label"], shuffle=False
    )
    assert rows(remote) == want
    listed = [f"s3://{s3.bucket}/tf/b.tfrecord", f"s3://{s3.bucket}/tf/a.tfrecord"]
    assert rows(TFRecordDataset(listed, shuffle=False)) == rows(
        TFRecordDataset([str(FIXTURES / "b.tfrecord"), str(FIXTURES / "a.tfrecord")], shuffle=False)
    )
    gz = TFRecordDataset(
        f"s3://{s3.bucket}/gz/*.gz", columns_list=["label"], shuffle=False, compression_type="GZIP"
    )
    assert rows(gz) == want
    with pytest.raises(FileNotFoundError, match="no file matches"):
        TFRecordDataset(f"s3://{s3.bucket}/tf/none-*.tfrecord")
