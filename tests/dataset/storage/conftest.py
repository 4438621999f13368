"""Fixtures of the object-storage tests: moto's S3 server in a subprocess."""

from .s3_server import s3, s3_server  # noqa: F401
