"""Each thread's position slot: its own, readable from another thread, gone with the thread."""

from __future__ import annotations

import gc
import threading

from jisu.dataset.core.position import position, position_of


def test_each_thread_writes_its_own_slot_and_another_thread_reads_it():
    written, release = threading.Event(), threading.Event()
    idents = {}

    def kernel(name: str, index: int) -> None:
        position().at(name, 0, index, op=f"op-{name}")
        idents[name] = threading.get_ident()
        if len(idents) == 2:
            written.set()
        release.wait(10)

    threads = [threading.Thread(target=kernel, args=(n, i)) for i, n in enumerate("ab")]
    for t in threads:
        t.start()
    assert written.wait(10)
    try:
        for index, name in enumerate("ab"):
            slot = position_of(idents[name])
            assert (slot.node, slot.op, slot.epoch, slot.index) == (name, f"op-{name}", 0, index)
        assert position().node != "a"  # this thread's slot is another one
    finally:
        release.set()
        for t in threads:
            t.join()


def test_a_slot_goes_with_its_thread():
    ident = []
    thread = threading.Thread(
        target=lambda: (position().at("n", 1, 2), ident.append(threading.get_ident()))
    )
    thread.start()
    thread.join()
    gc.collect()
    assert position_of(ident[0]) is None or position_of(ident[0]).node is None


def test_clear_and_unknown_threads():
    slot = position().at("n", 0, 5)
    slot.clear()
    assert (slot.node, slot.op, slot.epoch, slot.index) == (None, None, None, None)
    assert position_of(None) is None
