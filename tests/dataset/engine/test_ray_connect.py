"""RayExecutor's connection: an address where nothing listens fails the first stage within
seconds, with an error naming the address, before ``ray.init`` (which would wait a minute or
more). No Ray cluster is started here."""

from __future__ import annotations

import socket

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import jisu.dataset as ds  # noqa: E402
from jisu.dataset.engine.ray.executor import (  # noqa: E402
    RayConnectionError,
    _endpoint,
    probe_address,
)


@pytest.fixture
def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _not_connected():
    if ray.is_initialized():  # a connection made elsewhere is used as it is: no probe
        pytest.skip("Ray is initialised in this process already")
    yield
    ds.config.set_executor(None)
    assert not ray.is_initialized()  # the probe failed before ray.init started anything


@pytest.mark.timeout(30)
@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_address_where_nothing_listens_fails_the_first_stage_naming_it(free_port, scheme):
    address = f"{scheme}127.0.0.1:{free_port}"
    ds.config.set_executor(ds.RayExecutor(address, connect_timeout=2))
    pipeline = ds.NumpySlicesDataset(np.arange(8), ["x"], shuffle=False).map(
        lambda x: x + 1, num_parallel_workers=2
    )
    with pytest.raises(RuntimeError, match=f"nothing answers at the Ray address '{address}'"):
        list(pipeline.create_tuple_iterator(num_epochs=1))
    with pytest.raises(ConnectionError, match="ray start --head"):  # also a ConnectionError
        ds.RayExecutor(address, connect_timeout=2).connect()


@pytest.mark.timeout(30)
def test_ray_address_from_the_environment_is_probed_too(free_port, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{free_port}")
    with pytest.raises(RayConnectionError, match=f"127.0.0.1:{free_port}"):
        ds.RayExecutor(connect_timeout=2).connect()


def test_a_listening_address_passes_the_probe():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        probe_address(f"127.0.0.1:{server.getsockname()[1]}", 2.0)  # no error


@pytest.mark.parametrize(
    "address, endpoint",
    [
        ("127.0.0.1:6379", ("127.0.0.1", 6379)),
        ("ray://head.example:10001", ("head.example", 10001)),
        ("[::1]:6379", ("::1", 6379)),
        ("auto", None),
        ("local", None),
        ("head.example", None),
        ("http://127.0.0.1:8265", None),  # not an address Ray connects a driver to
    ],
)
def test_which_addresses_are_probed(address, endpoint):
    assert _endpoint(address) == endpoint


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), True, "5"])
def test_a_bad_connect_timeout_fails_at_construction(timeout):
    with pytest.raises(ValueError, match="connect_timeout must be"):
        ds.RayExecutor("127.0.0.1:6379", connect_timeout=timeout)
