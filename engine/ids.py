"""Random ids (UUID4) that do not give up the GIL on every one.

``uuid.uuid4()`` reads 16 bytes with ``os.urandom``, and CPython releases the GIL around that
system call. On the web server's event loop that is a trip to the back of the queue: the run
threads hold the GIL in turn for up to the switch interval (5 ms) each, so an id the loop makes
while they work costs it about 5 ms instead of 2 µs (measured beside four busy threads), and a
run makes several (its input, its answer, each tool call). Under load that was a fifth of the
loop's time (py-spy, 1,024 slow streams, bench/README.md "The regression found").

``new_id()`` is ``str(uuid.uuid4())`` from the same source, the operating system's CSPRNG, read
4 KiB at a time per thread: one system call for 256 ids. Each thread keeps its own buffer, and a
forked child starts with none, so no two processes or threads ever hand out the same bytes.
"""
from __future__ import annotations

import os
import threading
import uuid

_BATCH = 4096  # bytes: 256 ids per read


class _Buffer(threading.local):
    def __init__(self) -> None:
        self.data = b""
        self.offset = 0


_buffer = _Buffer()


def _forget_after_fork() -> None:
    # The parent's (and its other threads') unread bytes must never be handed out twice.
    global _buffer
    _buffer = _Buffer()


os.register_at_fork(after_in_child=_forget_after_fork)


def new_uuid() -> uuid.UUID:
    """A random (version 4) UUID, as ``uuid.uuid4()``."""
    buffer = _buffer
    offset = buffer.offset
    if offset + 16 > len(buffer.data):
        buffer.data, offset = os.urandom(_BATCH), 0
    buffer.offset = offset + 16
    return uuid.UUID(bytes=buffer.data[offset:offset + 16], version=4)


def new_id() -> str:
    """``str(uuid.uuid4())``: the id of a message, a tool call, a run, an approval."""
    return str(new_uuid())


__all__ = ["new_id", "new_uuid"]
