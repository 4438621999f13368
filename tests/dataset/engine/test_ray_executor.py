"""The Ray executor: pipeline stages on the actors of a real two-node local Ray cluster.

One cluster for the module (``ray.cluster_utils.Cluster``: a head node and a second node of
1 CPU each, started by the fixture, stopped at the end, and checked to leave no process).
Expectations come from the same pipelines run locally (threads), never from Ray runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import cv2  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

import jisu.dataset as ds  # noqa: E402
from jisu.dataset import vision  # noqa: E402
from jisu.dataset.engine.processes.workers import RemoteTraceback  # noqa: E402


def _ray_processes(pid: int) -> list:
    import psutil

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    alive = []
    for child in children:
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.fixture(scope="module")
def cluster():
    before = {p.pid for p in _ray_processes(os.getpid())}
    # a node that stops answering is declared dead within about a second (Ray's default
    # takes tens of seconds), so that no later test has an actor placed on a lost node
    health = {
        "health_check_initial_delay_ms": 0,
        "health_check_period_ms": 200,
        "health_check_failure_threshold": 3,
    }
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "_system_config": health}
    )
    try:
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
    deadline = time.monotonic() + 15
    while True:  # nothing of the cluster may outlive it
        left = [p for p in _ray_processes(os.getpid()) if p.pid not in before]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, f"Ray processes left running: {[(p.pid, p.name()) for p in left]}"


@pytest.fixture(autouse=True)
def _local_executor():
    yield
    ds.config.set_executor(None)
    ds.config.set_worker_restart(False)


# ---------------------------------------------------------------------- pipelines
class Source:
    """A random-access source of 8x8 RGB images and their indices."""

    def __init__(self, n: int) -> None:
        self.images = np.random.default_rng(7).integers(0, 255, (n, 8, 8, 3), dtype=np.uint8)

    def __getitem__(self, index: int) -> tuple:
        return self.images[index], np.array(index)

    def __len__(self) -> int:
        return len(self.images)


def random_pipeline(n: int = 48) -> ds.Dataset:
    """Random-access source, shuffled; random ops; a buffer shuffle; batches."""
    data = ds.GeneratorDataset(Source(n), ["image", "label"], shuffle=True)
    data = data.map([vision.RandomCrop(6), vision.RandomHorizontalFlip()], input_columns="image")
    return data.shuffle(8).batch(4)


def add_one_in_place(image: np.ndarray) -> np.ndarray:
    image += 1  # an op may write into its input, locally and on an actor alike
    return image


def stream_pipeline(n: int = 40) -> ds.Dataset:
    """An iterable source: the maps and the batch run as stages fed by the driver's stream."""
    images = np.random.default_rng(3).integers(0, 255, (n, 8, 8, 3), dtype=np.uint8)

    def rows():
        for i in range(n):
            yield images[i].copy(), np.array(i)

    data = ds.GeneratorDataset(rows, ["image", "label"])
    data = data.map(add_one_in_place, input_columns="image")  # items reach actors writable
    data = data.map(vision.RandomVerticalFlip(), input_columns="image")
    data = data.map([vision.RandomCrop(5), vision.Rescale(1 / 255, 0)], input_columns="image")
    return data.batch(3)


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(11)
    for label in ("cat", "dog"):
        (root / label).mkdir()
        for i in range(6):
            image = rng.integers(0, 255, (20 + i, 24, 3), dtype=np.uint8)
            ok, encoded = cv2.imencode(".jpg", image)
            assert ok
            (root / label / f"{i}.jpg").write_bytes(encoded.tobytes())
    return str(root)


def image_pipeline(image_dir: str) -> ds.Dataset:
    data = ds.ImageFolderDataset(image_dir, shuffle=True)
    ops = [vision.Decode(), vision.RandomResizedCrop(12), vision.RandomHorizontalFlip()]
    return data.map(ops, input_columns="image").batch(4)


def collect(data: ds.Dataset, num_epochs: int = 2) -> list[list[np.ndarray]]:
    """Every column of every row of ``num_epochs`` epochs."""
    it = data.create_tuple_iterator(num_epochs=num_epochs, output_numpy=True)
    try:
        return [[np.array(c) for c in row] for _ in range(num_epochs) for row in it]
    finally:
        it.close()


def assert_same(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for k, (row, want) in enumerate(zip(got, expected)):
        for a, b in zip(row, want):
            assert a.dtype == b.dtype and a.shape == b.shape, f"row {k}"
            assert np.array_equal(a, b), f"row {k} differs"


def use_ray(num_workers: int | None = 2, restart: bool = False) -> None:
    ds.config.set_worker_restart(restart)
    ds.config.set_executor(ds.RayExecutor(num_workers=num_workers))


# ---------------------------------------------------------------------- identical output
@pytest.mark.timeout(60)
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_random_pipeline_is_bit_identical_to_local(cluster, workers):
    expected = collect(random_pipeline())
    use_ray(workers)  # 3 on a 2-CPU cluster: the third actor is never placed, nor waited for
    assert_same(collect(random_pipeline()), expected)


@pytest.mark.timeout(60)
def test_tensors_from_the_object_store_are_the_users_to_write(cluster):
    """Arrays come back read-only from Ray's object store; a tensor handed out is writable
    and equal to the local one."""
    expected = collect(random_pipeline(), 1)
    use_ray(2)
    it = random_pipeline().create_tuple_iterator(num_epochs=1)
    try:
        rows = [list(row) for row in it]
    finally:
        it.close()
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected):
        for tensor, array in zip(row, want):
            assert np.array_equal(tensor.numpy(), array)
            tensor += 1  # no error: the tensor does not point into the object store


@pytest.mark.timeout(60)
def test_stream_stages_are_bit_identical_to_local(cluster):
    expected = collect(stream_pipeline())
    use_ray(2)
    assert_same(collect(stream_pipeline()), expected)


@pytest.mark.timeout(60)
def test_image_pipeline_is_bit_identical_to_local(cluster, image_dir):
    expected = collect(image_pipeline(image_dir))
    use_ray(2)
    assert_same(collect(image_pipeline(image_dir)), expected)


def device_decode_pipeline(image_dir: str) -> ds.Dataset:
    data = ds.ImageFolderDataset(image_dir, shuffle=True)
    ops = [vision.RandomCropDecodeResize(12).device("GPU"), vision.RandomHorizontalFlip()]
    return data.map(ops, input_columns="image", offload=True).batch(4)


@pytest.mark.timeout(60)
def test_device_decode_packets_are_bit_identical_to_local(cluster, image_dir):
    """The packets (JPEG bytes + the crop and flip draws) made on actors equal local ones."""
    expected = collect(device_decode_pipeline(image_dir))
    use_ray(2)
    assert_same(collect(device_decode_pipeline(image_dir)), expected)


@pytest.mark.timeout(60)
def test_run_time_settings_reach_the_actors(cluster, image_dir):
    """An op reads config.get_max_image_pixels() while it runs: the actors use the driver's."""
    use_ray(2)
    ds.config.set_max_image_pixels(100)  # the images have 480..600 pixels
    try:
        with pytest.raises(RuntimeError, match="more than the limit of 100 pixels"):
            collect(image_pipeline(image_dir), 1)
    finally:
        ds.config.set_max_image_pixels(2 * 89_478_485)


class NodeOfActor:
    """The id of the Ray node the op runs on. Each call first notes its node in ``directory``
    and waits (up to 30 s) until two nodes have: so no actor can run through the whole data
    set before the actor on the other node has started (a race that would make this test
    depend on timing)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import ray

        node = ray.get_runtime_context().get_node_id()
        open(os.path.join(self.directory, node), "w").close()
        deadline = time.monotonic() + 30
        while len(os.listdir(self.directory)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        return np.array(node)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("workers", [2, None])  # None: as many as the cluster's CPUs
def test_tasks_run_on_both_nodes(cluster, tmp_path, workers):
    use_ray(workers)
    data = ds.GeneratorDataset(Source(64), ["image", "label"])
    data = data.map(NodeOfActor(str(tmp_path)), input_columns="image", output_columns="node")
    nodes = {str(row[0]) for row in collect(data, 1)}
    assert nodes == {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def pid_of_worker(x: np.ndarray) -> np.ndarray:
    return np.array(os.getpid())


@pytest.mark.timeout(60)
def test_set_executor_none_goes_back_to_local(cluster):
    data = ds.GeneratorDataset(Source(8), ["image", "label"]).map(
        pid_of_worker, input_columns="image", output_columns="pid"
    )
    use_ray(1)
    assert isinstance(ds.config.get_executor(), ds.RayExecutor)
    assert {int(row[0]) for row in collect(data, 1)} != {os.getpid()}
    ds.config.set_executor(None)
    assert ds.config.get_executor() is None
    assert {int(row[0]) for row in collect(data, 1)} == {os.getpid()}


# ---------------------------------------------------------------------- resume
def _resume(make, position: int, save_ray: bool, restore_ray: bool) -> list:
    """Rows 2 epochs long: ``position`` rows into epoch 1 under one executor, the state saved,
    and the rest from a new iterator under the other."""
    (use_ray if save_ray else lambda: ds.config.set_executor(None))()
    it = make().create_tuple_iterator(num_epochs=2, output_numpy=True)
    rows = [[np.array(c) for c in row] for row in it]  # epoch 0
    for _ in range(position):
        rows.append([np.array(c) for c in next(it)])
    state = it.get_state()
    it.close()
    (use_ray if restore_ray else lambda: ds.config.set_executor(None))()
    it = make().create_tuple_iterator(num_epochs=2, output_numpy=True)
    it.set_state(state)
    try:
        rows.extend([np.array(c) for c in row] for row in it)
    finally:
        it.close()
    return rows


@pytest.mark.timeout(60)
@pytest.mark.parametrize("save_ray, restore_ray", [(False, True), (True, False)])
def test_resume_across_executors_equals_uninterrupted_run(cluster, save_ray, restore_ray):
    expected = collect(random_pipeline())
    assert_same(_resume(random_pipeline, 5, save_ray, restore_ray), expected)


# ---------------------------------------------------------------------- failures
class ExitOnce:
    """Passes labels through; the first worker to reach ``at`` creates ``marker`` and ends
    its process there (``os._exit``), as a crash or the OOM killer would."""

    def __init__(self, marker: str, at: int) -> None:
        self.marker = marker
        self.at = at

    def __call__(self, label: np.ndarray) -> np.ndarray:
        if int(label) == self.at:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return label
            os._exit(1)
        return label


def dying_pipeline(marker: str) -> ds.Dataset:
    data = ds.GeneratorDataset(Source(40), ["image", "label"], shuffle=True)
    data = data.map(vision.RandomHorizontalFlip(), input_columns="image")
    data = data.map(ExitOnce(marker, at=21), input_columns="label")
    return data.batch(4)


@pytest.mark.timeout(60)
def test_dead_actor_is_replaced_with_worker_restart(cluster, tmp_path):
    marker = str(tmp_path / "exited")
    open(marker, "w").close()  # locally no one exits
    expected = collect(dying_pipeline(marker))
    os.unlink(marker)
    use_ray(2, restart=True)
    assert_same(collect(dying_pipeline(marker)), expected)
    assert os.path.exists(marker)  # an actor did die


@pytest.mark.timeout(60)
def test_dead_actor_without_restart_names_stage_and_node(cluster, tmp_path):
    marker = str(tmp_path / "exited")
    use_ray(2, restart=False)
    with pytest.raises(RuntimeError, match="died while the pipeline was running") as info:
        collect(dying_pipeline(marker))
    message = str(info.value)
    assert os.path.exists(marker)
    assert "GeneratorDataset" in message and "map(ExitOnce)" in message  # the stage
    assert "set_worker_restart(True)" in message
    nodes = [n for n in ray.nodes() if n["NodeID"] in message]
    assert len(nodes) == 1 and nodes[0]["NodeManagerAddress"] in message  # node id and IP


class Slow:
    """Passes its input through after 20 ms (a task is still running when the node goes)."""

    def __call__(self, x: np.ndarray) -> np.ndarray:
        time.sleep(0.02)
        return x


@pytest.mark.timeout(60)
def test_lost_node_without_restart_names_the_node(cluster):
    victim = cluster.add_node(num_cpus=1, resources={"victim": 1})
    try:
        cluster.wait_for_nodes()
        victim_id = victim.node_id
        ds.config.set_executor(
            ds.RayExecutor(num_workers=1, resources_per_worker={"CPU": 1, "victim": 1})
        )
        data = ds.GeneratorDataset(Source(200), ["image", "label"], shuffle=False)
        it = data.map(Slow(), input_columns="image").create_tuple_iterator(num_epochs=1)
        rows = 0
        with pytest.raises(RuntimeError, match="while the pipeline was running") as info:
            for _ in it:  # at most a few dozen rows are in flight: most are still to come
                rows += 1
                if rows == 5:
                    cluster.remove_node(victim, allow_graceful=False)
        it.close()
    finally:
        if victim in cluster.worker_nodes:
            cluster.remove_node(victim)
        deadline = time.monotonic() + 30  # until Ray knows: no later actor may go there
        while time.monotonic() < deadline and any(
            n["NodeID"] == victim.node_id and n["Alive"] for n in ray.nodes()
        ):
            time.sleep(0.1)
    message = str(info.value)
    assert rows < 200
    assert f"on node {victim_id} ({victim.node_ip_address})" in message
    assert "GeneratorDataset -> map(Slow)" in message


def fail_on_seven(label: np.ndarray) -> np.ndarray:
    if int(label) == 7:
        raise ValueError("label seven is not allowed")
    return label


@pytest.mark.timeout(60)
def test_op_error_in_an_actor_names_op_column_sample_with_remote_traceback(cluster):
    use_ray(2)
    data = ds.GeneratorDataset(Source(16), ["image", "label"], shuffle=False)
    data = data.map(fail_on_seven, input_columns="label").batch(2)
    with pytest.raises(ValueError, match="label seven is not allowed") as info:
        collect(data, 1)
    message = str(info.value)
    assert "fail_on_seven" in message and "'label'" in message and "sample 7" in message
    assert isinstance(info.value, RuntimeError)  # MindSpore's contract, as locally
    causes = []
    cause = info.value
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__
    remote = [c for c in causes if isinstance(c, RemoteTraceback)]
    assert remote and 'raise ValueError("label seven is not allowed")' in str(remote[0])


class LoadsOnlyInTheDriver:
    """An op whose unpickling fails outside the process that made it (as a module missing on
    a node would)."""

    def __init__(self) -> None:
        self.pid = os.getpid()

    def __setstate__(self, state: dict) -> None:
        if state["pid"] != os.getpid():
            raise ModuleNotFoundError("No module named 'only_on_the_driver'")
        self.__dict__.update(state)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x


@pytest.mark.timeout(60)
def test_stage_an_actor_cannot_load_fails_naming_the_node(cluster):
    use_ray(1)
    data = ds.GeneratorDataset(Source(8), ["image", "label"])
    data = data.map(LoadsOnlyInTheDriver(), input_columns="image")
    with pytest.raises(ModuleNotFoundError, match="could not load the stage") as info:
        collect(data, 1)
    message = str(info.value)
    assert "only_on_the_driver" in message and "LoadsOnlyInTheDriver" in message
    assert any(n["NodeID"] in message for n in ray.nodes())
    assert isinstance(info.value, RuntimeError)


class Unpicklable:
    """A random-access source holding a lock (which cannot be pickled)."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()

    def __getitem__(self, index: int) -> np.ndarray:
        return np.array(index)

    def __len__(self) -> int:
        return 4


@pytest.mark.timeout(60)
def test_unpicklable_stage_names_the_ops(cluster):
    use_ray(1)
    data = ds.GeneratorDataset(Unpicklable(), ["x"])
    with pytest.raises(TypeError, match=r"GeneratorDataset.*cannot be pickled"):
        collect(data, 1)


# ---------------------------------------------------------------------- arguments, extra
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_workers": 0}, ValueError, "num_workers must be an int >= 1 or None"),
        ({"num_workers": -2}, ValueError, "Received: num_workers=-2"),
        ({"num_workers": 1.5}, ValueError, "num_workers"),
        ({"num_workers": True}, ValueError, "num_workers"),
        ({"resources_per_worker": "CPU"}, TypeError, "resources_per_worker must be a dict"),
        ({"resources_per_worker": {"CPU": -1}}, ValueError, r"resources_per_worker\['CPU'\]"),
        ({"resources_per_worker": {"GPU": float("nan")}}, ValueError, "resources_per_worker"),
        ({"resources_per_worker": {1: 1}}, TypeError, "resources_per_worker keys"),
        ({"resources_per_worker": {"CPU": 0}}, ValueError, "asks for no resource"),
        ({"address": 6379}, TypeError, "address must be"),
    ],
)
def test_bad_arguments_fail_at_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        ds.RayExecutor(**kwargs)


def test_set_executor_rejects_other_objects():
    with pytest.raises(TypeError, match=r"executor must be a jisu\.dataset\.RayExecutor or None"):
        ds.config.set_executor("ray")


@pytest.mark.timeout(60)
def test_resources_no_node_has_fail_clearly(cluster):
    ds.config.set_executor(ds.RayExecutor(resources_per_worker={"CPU": 64}))
    with pytest.raises(ValueError, match="no node of the Ray cluster has the resources"):
        collect(random_pipeline(), 1)


def test_without_ray_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ImportError, match=r'pip install "jisu\[ray\]"'):
        ds.RayExecutor()


@pytest.mark.timeout(60)
def test_importing_jisu_does_not_import_ray():
    code = "import sys, jisu, jisu.dataset; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=50)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
