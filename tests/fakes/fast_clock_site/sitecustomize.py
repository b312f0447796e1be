"""A faster wall clock for the real processes a test starts (Celery beat and workers, the
``scheduler_tick --loop`` web tickers), so that tests of cron schedules see several minutes go by
in a few seconds instead of waiting for real minute boundaries.

A process started with this directory on PYTHONPATH and ``FAST_CLOCK=<real start>:<fake start>:<rate>``
in its environment reads the wall clock as ``fake start + (now - real start) * rate``: every
process given the same value agrees on the time, whenever it started. Only the wall clock is
faked (``time.time``, ``time.time_ns``, ``datetime.now``/``utcnow``/``today``, ``date.today``):
monotonic time, sleeps and timeouts stay real, and so does the database server's clock (the
project's code reads the time in Python). Without FAST_CLOCK this module does nothing.
"""
from __future__ import annotations

import os


def _install(spec: str) -> None:
    import ctypes
    import datetime as dt
    import gc
    import time

    real_start, fake_start, rate = (float(part) for part in spec.split(":"))
    real_time = time.time

    def fake_time() -> float:
        return fake_start + (real_time() - real_start) * rate

    def fake_time_ns() -> int:
        return int(fake_time() * 1e9)

    time.time, time.time_ns = fake_time, fake_time_ns

    def patch(cls: type, name: str, function) -> None:
        # Built-in types refuse setattr; their attribute dict is reachable through the mappingproxy.
        gc.get_referents(cls.__dict__)[0][name] = classmethod(function)
        ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))

    from_timestamp = dt.datetime.fromtimestamp
    utc_from_timestamp = dt.datetime.utcfromtimestamp

    def now(cls, tz=None):
        value = from_timestamp(fake_time(), tz)
        return value if cls is dt.datetime else cls.fromtimestamp(fake_time(), tz)

    def utcnow(cls):
        return utc_from_timestamp(fake_time())

    def today(cls):
        return now(cls)

    def date_today(cls):
        return dt.date.fromtimestamp(fake_time())

    patch(dt.datetime, "now", now)
    patch(dt.datetime, "utcnow", utcnow)
    patch(dt.datetime, "today", today)
    patch(dt.date, "today", date_today)


if os.environ.get("FAST_CLOCK"):
    _install(os.environ["FAST_CLOCK"])
