"""Python's cyclic garbage collector, set for a long-running server or worker process.

Python collects its youngest generation after every 700 net allocations of container objects
and, every hundred of those, the whole heap. A run allocates a few hundred (a request, its
events, the SDK's call), so a server at c=8 collected about once every four runs, and about once
every thousand runs walked the quarter-million objects Django, the apps and the SDKs loaded:
0.12 s each. Together, 4 % of a non-streamed run's CPU on the instant model (bench/README.md,
"Cut by count, and the collector"). Here the young generation waits for 10,000 allocations, and
what the process loaded before serving is frozen (``gc.freeze``): left out of every collection,
since it lives as long as the process.

Only cycles are the collector's to free: most objects go when their last reference does, at any
threshold. Cyclic garbage waits longer for its collection, which costs memory (README,
Production deployment).
"""
from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000


def collector_tune() -> None:
    """Set the collector for serving: called once the process has loaded what it serves with."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
