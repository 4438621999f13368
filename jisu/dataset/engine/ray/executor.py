"""The Ray executor: a pipeline's parallel stages run on the actors of a Ray cluster.

Set it with ``ds.config.set_executor(ds.RayExecutor(...))``; ``ds.config.set_executor(None)``
goes back to local threads and processes. Like every setting it is read when an iterator is
created. jisu keeps the plan (see :mod:`.plan`): the permutation, the shards, the random
streams keyed by (seed, epoch, row, op) and the order are decided in the driver exactly as in a
local run; Ray only runs the stages' picklable tasks, the same ones a local worker process
runs, on actors (:mod:`.pool`). The output is therefore bit-identical to a local run and
``get_state``/``set_state`` work unchanged, also across executors.

Ray is an optional dependency (``pip install "jisu[ray]"``) and is imported only when a
``RayExecutor`` is made; importing jisu never imports Ray.
"""

from __future__ import annotations

import logging
import math
import numbers
import os
import socket
import threading
from typing import TYPE_CHECKING, Any

from ...core.executor import Executor
from ..errors import PipelineError

if TYPE_CHECKING:
    from ..context import ExecContext
    from ..tasks import StageTask
    from .pool import RayPool

logger = logging.getLogger("jisu.dataset")

INSTALL_HINT = 'pip install "jisu[ray]"'
# resources that Ray's actor options name on their own; any other key is a custom resource
_OPTION_NAMES = {"CPU": "num_cpus", "GPU": "num_gpus", "memory": "memory"}
CONNECT_TIMEOUT_S = 5.0  # the default wait for the cluster's address to accept a connection


class RayConnectionError(ConnectionError, PipelineError):
    """Nothing answers at the Ray cluster's address (names it). A ``ConnectionError`` and,
    like every failure while iterating, a ``RuntimeError``."""


def _endpoint(address: str) -> tuple[str, int] | None:
    """The ``(host, port)`` that a Ray address names (``"host:6379"``, ``"ray://host:10001"``),
    or None for one that names none (``"auto"``, ``"local"``, a bare host)."""
    text = address.strip()
    if "://" in text:
        scheme, text = text.split("://", 1)
        if scheme.lower() != "ray":
            return None
    host, sep, port = text.split("/", 1)[0].rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def probe_address(address: str | None, timeout: float) -> None:
    """Check that something accepts TCP connections at a Ray address, within ``timeout``
    seconds: ``ray.init`` waits a minute or more before it gives up on an address where
    nothing listens. Addresses naming no port (``"auto"``, None) are left to Ray.

    Raises:
        RayConnectionError: naming the address.
    """
    endpoint = None if address is None else _endpoint(address)
    if endpoint is None:
        return
    try:
        with socket.create_connection(endpoint, timeout=timeout):
            pass
    except OSError as exc:
        raise RayConnectionError(
            f"RayExecutor: nothing answers at the Ray address {address!r} (a TCP connection "
            f"to {endpoint[0]}:{endpoint[1]} failed within {timeout:g} s: {exc}); start the "
            "cluster (`ray start --head`) or correct the address"
        ) from exc


def import_ray() -> Any:
    """The ``ray`` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            f"RayExecutor runs pipeline stages on a Ray cluster and needs Ray, which is not "
            f"installed: {INSTALL_HINT}"
        ) from exc
    return ray


def _check_resources(resources: Any) -> dict[str, float]:
    """``resources_per_worker`` validated, with ``CPU`` defaulting to 1."""
    if resources is None:
        return {"CPU": 1.0}
    if not isinstance(resources, dict):
        raise TypeError(
            "RayExecutor: resources_per_worker must be a dict of Ray resource names to amounts, "
            f'such as {{"CPU": 2, "memory": 4e9}}, or None. Received: resources_per_worker='
            f"{resources!r}"
        )
    checked: dict[str, float] = {}
    for name, amount in resources.items():
        if not isinstance(name, str) or not name:
            raise TypeError(
                "RayExecutor: resources_per_worker keys must be resource names (str). "
                f"Received: resources_per_worker={resources!r}"
            )
        if (
            isinstance(amount, bool)
            or not isinstance(amount, numbers.Real)
            or not math.isfinite(amount)
            or amount < 0
        ):
            raise ValueError(
                f"RayExecutor: resources_per_worker[{name!r}] must be a finite number >= 0. "
                f"Received: resources_per_worker={resources!r}"
            )
        checked[name] = float(amount)
    checked.setdefault("CPU", 1.0)
    if not any(checked.values()):
        raise ValueError(
            "RayExecutor: resources_per_worker asks for no resource at all, so Ray could put "
            "any number of actors on one CPU; give each worker some, e.g. {'CPU': 1}. "
            f"Received: resources_per_worker={resources!r}"
        )
    return checked


class RayExecutor(Executor):
    """Run every parallel stage's tasks on Ray actors, on any node of a Ray cluster.

    Each parallel stage of an iterator gets its own actors (one per worker, spread over the
    cluster's nodes); each actor loads the stage once and then runs its tasks one at a time.
    Results come back through Ray's object store and are handed out in order; at most a few
    tasks per actor are in flight (see :mod:`.pool`). An actor or node that dies has its
    tasks re-run on a new actor with ``config.set_worker_restart(True)`` (the same output, at
    most 3 restarts per stage), else the pipeline fails with an error naming the stage and the
    node.

    Connecting: when the first stage starts, jisu calls ``ray.init(address)`` unless Ray is
    initialised in this process already (then that connection is used as it is). With
    ``address=None`` Ray connects to the cluster in ``RAY_ADDRESS`` or one started with
    ``ray start`` on this machine, and otherwise starts a local Ray instance inside this
    process; such an instance stays up until the process exits. jisu never shuts Ray down.

    Nodes other than the driver's need jisu installed (and the modules the pipeline's ops and
    source come from, and the files they read at the same paths, or object storage URLs):
    actors import them by name. On the driver's machine they are importable already (Ray
    gives actors the driver's ``sys.path``).

    Args:
        address: the Ray cluster to connect to (``"auto"``, ``"ray://host:10001"``,
            ``"host:6379"``); None: see above. Ignored when Ray is initialised already.
        num_workers: actors per parallel stage; None: as many as the cluster's resources hold
            at the time the stage starts, shared among the iterator's parallel stages (at
            least 1 each). An op's explicit ``num_parallel_workers`` caps its stage's actors
            (a promise to the user's code, as for worker processes). Actors the cluster cannot
            place yet get no tasks until Ray places them.
        resources_per_worker: Ray resources each actor holds, such as ``{"CPU": 2}`` or
            ``{"CPU": 1, "memory": 2e9, "my_resource": 1}``; ``CPU`` defaults to 1.
        connect_timeout: seconds to wait, before ``ray.init``, for the address (or
            ``RAY_ADDRESS``) to accept a TCP connection when it names a port (default 5):
            where nothing listens the first stage fails at once with a
            :class:`RayConnectionError` naming the address, where ``ray.init`` alone would
            wait a minute or more.

    Raises:
        ImportError: Ray is not installed (the message says ``pip install "jisu[ray]"``).
        ValueError, TypeError: a bad argument, named.
        RayConnectionError: (when the first stage starts; a ``RuntimeError``) nothing
            answers at the address.

    Example:
        >>> import jisu.dataset as ds
        >>> ds.config.set_executor(ds.RayExecutor(num_workers=16))  # doctest: +SKIP
        >>> for batch in pipeline: ...                              # doctest: +SKIP
        >>> ds.config.set_executor(None)  # back to local workers
    """

    def __init__(
        self,
        address: str | None = None,
        num_workers: int | None = None,
        resources_per_worker: dict[str, float] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        if (
            isinstance(connect_timeout, bool)
            or not isinstance(connect_timeout, numbers.Real)
            or not math.isfinite(connect_timeout)
            or connect_timeout <= 0
        ):
            raise ValueError(
                "RayExecutor: connect_timeout must be a finite number of seconds > 0. "
                f"Received: connect_timeout={connect_timeout!r}"
            )
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise TypeError(
                "RayExecutor: address must be a Ray cluster address (str) or None. "
                f"Received: address={address!r}"
            )
        if num_workers is not None and (
            isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1
        ):
            raise ValueError(
                "RayExecutor: num_workers must be an int >= 1 or None. "
                f"Received: num_workers={num_workers!r}"
            )
        self.address = address
        self.num_workers = num_workers
        self.resources_per_worker = _check_resources(resources_per_worker)
        self.connect_timeout = float(connect_timeout)
        self._ray = import_ray()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"RayExecutor(address={self.address!r}, num_workers={self.num_workers!r}, "
            f"resources_per_worker={self.resources_per_worker!r})"
        )

    def connect(self) -> Any:
        """The ``ray`` module, connected (see the class doc)."""
        ray = self._ray
        with self._lock:
            if not ray.is_initialized():
                logger.info("jisu: connecting to Ray (address=%r)", self.address)
                probe_address(self.address or os.environ.get("RAY_ADDRESS"), self.connect_timeout)
                ray.init(address=self.address, ignore_reinit_error=True)
        return ray

    def actor_options(self) -> dict[str, Any]:
        """Ray's ``.options(...)`` for one worker actor."""
        options: dict[str, Any] = {"max_restarts": 0, "max_task_retries": 0}
        custom = {}
        for name, amount in self.resources_per_worker.items():
            if name in _OPTION_NAMES:
                options[_OPTION_NAMES[name]] = amount
            else:
                custom[name] = amount
        if custom:
            options["resources"] = custom
        options["scheduling_strategy"] = "SPREAD"  # over the nodes, not packed onto one
        return options

    def check_feasible(self, stage: str) -> None:
        """Raise ValueError when no live node of the cluster could ever hold one worker (its
        actors would wait forever)."""
        ray = self._ray
        wanted = self.resources_per_worker
        for node in ray.nodes():
            have = node.get("Resources", {}) if node.get("Alive") else None
            if have is not None and all(have.get(k, 0.0) >= v for k, v in wanted.items() if v):
                return
        raise ValueError(
            f"{stage}: no node of the Ray cluster has the resources one worker asks for "
            f"(resources_per_worker={wanted}); the cluster has {ray.cluster_resources()}. "
            "Lower resources_per_worker or add such nodes."
        )

    def workers_for(self, explicit: int | None, stages: int) -> int:
        """The actor count of a stage: ``num_workers``, or what the cluster holds shared among
        ``stages`` stages; at most ``explicit``, the smallest explicit ``num_parallel_workers``
        of its ops (the plan's :attr:`~.plan.Stage.explicit`)."""
        count = self.num_workers
        if count is None:
            total = self._ray.cluster_resources()
            fits = [total.get(k, 0.0) / v for k, v in self.resources_per_worker.items() if v]
            count = max(1, int(min(fits) + 1e-9) // max(1, stages))
        return count if explicit is None else min(count, explicit)

    def pool(self, name: str, workers: int, ctx: ExecContext, task: StageTask) -> RayPool:
        """A :class:`.pool.RayPool` for one stage (``workers``: the plan's local count,
        which the pool's in-flight bound is measured against)."""
        from .pool import RayPool

        self.connect()
        self.check_feasible(name)
        stage = ctx.plan.owned_by(task.node)
        explicit = None if stage is None else stage.explicit
        actors = self.workers_for(explicit, max(1, len(ctx.plan.stages)))
        return RayPool(name, workers, actors, ctx, task, self)
