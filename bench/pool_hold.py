"""How long a web request holds its pooled PostgreSQL connection, against DB_POOL_TIMEOUT.

    .venv/bin/python -m bench.pool_hold [--requests 200]

Each request of a few read endpoints goes through Django's test client on a fresh database, then
gets what a request thread does after a request (``close_old_connections``: with the pool, the
connection goes back); the pool's ``getconn``/``putconn`` are timed. A request waits for a
connection only while all ``DB_POOL_MAX_SIZE`` are held, so the hold time says how long a busy
(not a held) pool keeps it waiting, and how far from that DB_POOL_TIMEOUT is.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from ._django import bench_database, setup

PATHS = ("/sessions?limit=5&page=1", "/agents", "/config")


def measure(requests: int) -> dict:
    with bench_database("postgres", name="agno_site_bench_pool_hold") as url:
        setup(url)
        from django.conf import settings
        from django.db import close_old_connections, connection
        from django.test import Client

        pool = connection.pool
        holds: list[float] = []
        taken: dict[int, float] = {}
        get, put = pool.getconn, pool.putconn

        def getconn(*args, **kwargs):
            conn = get(*args, **kwargs)
            taken[id(conn)] = time.perf_counter()
            return conn

        def putconn(conn):
            started = taken.pop(id(conn), None)
            if started is not None:
                holds.append(time.perf_counter() - started)
            return put(conn)

        pool.getconn, pool.putconn = getconn, putconn
        connection.close()
        client = Client()
        report = {"pool_timeout_s": settings.DATABASES["default"]["OPTIONS"]["pool"]["timeout"], "paths": {}}
        for path in PATHS:
            holds.clear()
            for _ in range(requests):
                response = client.get(path)
                close_old_connections()  # what the request thread does after a request (CONN_MAX_AGE=0)
                assert response.status_code == 200, (path, response.status_code)
            cuts = statistics.quantiles(holds, n=100)
            report["paths"][path] = {
                "holds": len(holds), "median_ms": round(statistics.median(holds) * 1000, 2),
                "p90_ms": round(cuts[89] * 1000, 2), "p99_ms": round(cuts[98] * 1000, 2), "max_ms": round(max(holds) * 1000, 2),
            }
        connection.close()
        return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    print(json.dumps(measure(parser.parse_args().requests), indent=2))


if __name__ == "__main__":
    main()
