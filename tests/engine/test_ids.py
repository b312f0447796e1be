"""engine.ids: UUID4s from the OS's CSPRNG, read in batches so the event loop does not give up
the GIL for each (``os.urandom`` releases it: beside busy run threads an id cost the loop a
switch interval, ~5 ms, instead of ~2 µs)."""
from __future__ import annotations

import os
import threading
import uuid

import pytest

from engine import ids


def test_ids_are_version_4_uuids_and_distinct() -> None:
    made = [ids.new_id() for _ in range(2_000)]  # several batches
    assert len(set(made)) == len(made)
    for value in made[:300]:
        parsed = uuid.UUID(value)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == value


def test_the_os_is_asked_once_for_256_ids(monkeypatch) -> None:
    reads: list[int] = []
    real = os.urandom

    def counted(size: int) -> bytes:
        reads.append(size)
        return real(size)

    monkeypatch.setattr(ids.os, "urandom", counted)
    monkeypatch.setattr(ids, "_buffer", ids._Buffer())  # this thread starts empty
    for _ in range(512):
        ids.new_uuid()
    assert reads == [4096, 4096]


def test_threads_never_share_bytes() -> None:
    made: list[list[str]] = [[] for _ in range(8)]

    def work(out: list[str]) -> None:
        out.extend(ids.new_id() for _ in range(600))

    threads = [threading.Thread(target=work, args=(out,)) for out in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [value for out in made for value in out]
    assert len(set(every)) == len(every) == 8 * 600


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_does_not_hand_out_its_parents_unread_bytes() -> None:
    ids.new_id()  # the parent's buffer holds 255 more
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, then leave without running the parent's cleanups
        try:
            os.write(write, ",".join(ids.new_id() for _ in range(10)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split(",")
    os.waitpid(pid, 0)
    parent = [ids.new_id() for _ in range(10)]
    assert len(child) == 10 and not set(child) & set(parent)
