"""Drive AgentOS 3.1.10 and Agno Site with the same requests and print where their answers differ.

    bash bench/agentos_reference/setup.sh        # once (the reference venv, outside the project)
    .venv/bin/python -m bench.wire_diff [--keep]

Starts the instant model, AgentOS (bench/agentos_reference/app.py) and Agno Site serving the same
agent on fresh SQLite files, as bench.compare does, then sends both the same calls: runs (JSON
and SSE), polling, sessions and their runs, session create/rename/update/delete, memories, the
unified continue (regenerate, follow-up, a bad boundary), checkpoints and session forks. For each call it compares what a client can rely on:
status codes, key sets, event names, lineage and statuses, and error texts; values that differ
by nature (ids, times, the database id) are left out. Exits 1 when anything differs. A tool for
wire compatibility work, not a test: the suite cannot assume the reference venv.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import httpx

from .compare import Bench, Model, agentos_server, free_port, site_server, stop

Observation = dict[str, Any]
# Where Agno Site answers differently on purpose (README, "REST API").
DELIBERATE = {
    ("errors", "page_zero"): "AgentOS answers page=0 with a 500; every client error here is a 4xx",
    ("more reads", "config"): "/config names only the families this server serves (evals, knowledge, learning, "
                              "metrics, traces and company come with their issues)",
}


def _keys(value: Any) -> Any:
    return sorted(value) if isinstance(value, dict) else type(value).__name__


def _events(response: httpx.Response) -> list[str]:
    return [line[len("event: "):] for line in response.text.splitlines() if line.startswith("event: ")]


def scenarios(client: httpx.Client) -> list[tuple[str, Callable[[], Observation]]]:
    runs: dict[str, dict] = {}

    def post_run(**form: str) -> httpx.Response:
        return client.post("/agents/bench-agent/runs", data=form)

    def run() -> Observation:
        response = post_run(message="hello there", stream="false", session_id="wire-1")
        body = response.json()
        runs["first"] = body
        return {"status": response.status_code, "keys": _keys(body), "run_status": body.get("status"),
                "input": body.get("input"), "metrics": _keys(body.get("metrics"))}

    def streamed() -> Observation:
        response = post_run(message="and again", session_id="wire-1")
        return {"status": response.status_code, "content_type": response.headers.get("content-type", "").split(";")[0],
                "events": sorted(set(_events(response)))}

    def poll() -> Observation:
        first = runs["first"]
        response = client.get(f"/agents/bench-agent/runs/{first['run_id']}", params={"session_id": "wire-1"})
        return {"status": response.status_code, "keys": _keys(response.json())}

    def sessions() -> Observation:
        body = client.get("/sessions", params={"limit": 20, "page": 1}).json()
        return {"keys": _keys(body), "meta": _keys(body.get("meta")), "item": _keys((body.get("data") or [{}])[0])}

    def session() -> Observation:
        response = client.get("/sessions/wire-1")
        return {"status": response.status_code, "keys": _keys(response.json())}

    def session_runs() -> Observation:
        body = client.get("/sessions/wire-1/runs").json()
        return {"count": len(body), "item": _keys(body[0]) if body else None, "statuses": [run.get("status") for run in body]}

    def regenerate() -> Observation:
        first = runs["first"]
        response = client.post(f"/agents/bench-agent/runs/{first['run_id']}/continue",
                               data={"session_id": "wire-1", "regenerate": "true", "stream": "false"})
        body = response.json()
        runs["regenerated"] = body
        listed = client.get("/sessions/wire-1/runs").json()
        return {
            "status": response.status_code, "keys": _keys(body), "regenerated_from_source": body.get("regenerated_from") == first["run_id"],
            "forked_from_source": body.get("forked_from_run_id") == first["run_id"], "forked_from_message_index": body.get("forked_from_message_index"),
            "source_status_after": next((run.get("status") for run in listed if run.get("run_id") == first["run_id"]), None),
        }

    def follow_up() -> Observation:
        source = runs["regenerated"]
        response = client.post(f"/agents/bench-agent/runs/{source['run_id']}/continue",
                               data={"session_id": "wire-1", "input": "tell me more", "stream": "false"})
        body = response.json()
        runs["follow"] = body
        return {"status": response.status_code, "forked_from_source": body.get("forked_from_run_id") == source["run_id"],
                "forked_from_message_index": body.get("forked_from_message_index"), "run_status": body.get("status")}

    def checkpoints() -> Observation:
        follow = runs["follow"]
        body = client.get(f"/agents/bench-agent/runs/{follow['run_id']}/checkpoints", params={"session_id": "wire-1"}).json()
        return {"keys": _keys(body), "checkpoints": [(c["checkpoint_id"], c["reason"], c["message_index"], c["message_role"], c["is_latest"]) for c in body["checkpoints"]],
                "entry": _keys(body["checkpoints"][0])}

    def snapshot() -> Observation:
        follow = runs["follow"]
        body = client.get(f"/agents/bench-agent/runs/{follow['run_id']}/checkpoints/2", params={"session_id": "wire-1"}).json()
        past = client.get(f"/agents/bench-agent/runs/{follow['run_id']}/checkpoints/99", params={"session_id": "wire-1"})
        return {"keys": _keys(body), "messages": len(body["snapshot"].get("messages") or []), "past_the_end": (past.status_code, past.json())}

    def streamed_follow_up() -> Observation:
        follow = runs["follow"]
        response = client.post(f"/agents/bench-agent/runs/{follow['run_id']}/continue", data={"session_id": "wire-1", "input": "once more"})
        events = _events(response)
        return {"status": response.status_code, "first": events[:1], "last": events[-1:], "events": sorted(set(events))}

    def bad_boundary() -> Observation:
        first = runs["first"]
        response = client.post(f"/agents/bench-agent/runs/{first['run_id']}/continue", data={"session_id": "wire-1", "continue_from": "bogus", "stream": "false"})
        return {"status": response.status_code, "body": response.json()}

    def fork() -> Observation:
        response = client.post("/agents/bench-agent/sessions/wire-1/fork")
        missing = client.post("/agents/bench-agent/sessions/no-such-session/fork")
        copied = client.get(f"/sessions/{response.json()['session_id']}/runs").json()
        return {"status": response.status_code, "keys": _keys(response.json()), "missing": (missing.status_code, missing.json()),
                "copied_runs": len(copied), "copied_statuses": sorted(run.get("status") for run in copied)}

    def errors() -> Observation:
        return {
            "unknown_agent": (lambda r: (r.status_code, r.json()))(client.post("/agents/nope/runs", data={"message": "x"})),
            "json_body": client.post("/agents/bench-agent/runs", json={"message": "x"}).status_code,
            "page_zero": client.get("/sessions", params={"page": 0, "limit": 5}).status_code,
        }

    def session_crud() -> Observation:
        created = client.post("/sessions", json={"session_id": "wire-made", "session_name": "made", "session_state": {"a": 1}})
        renamed = client.post("/sessions/wire-made/rename", json={"session_name": "renamed"})
        patched = client.patch("/sessions/wire-made", json={"metadata": {"k": "v"}})
        previews = client.get("/sessions/wire-1/run-previews")
        agent_runs = client.get("/agents/bench-agent/runs", params={"session_id": "wire-1"})
        deleted = client.delete("/sessions/wire-made")
        gone = client.get("/sessions/wire-made")
        return {
            "create": (created.status_code, _keys(created.json())), "rename": (renamed.status_code, _keys(renamed.json())),
            "patch": (patched.status_code, _keys(patched.json())),
            "previews": (previews.status_code, _keys((previews.json() or [{}])[0])),
            "agent_runs": (agent_runs.status_code, _keys((agent_runs.json() or [{}])[0])),
            "delete": deleted.status_code, "gone": (gone.status_code, gone.json()),
        }

    def memories() -> Observation:
        created = client.post("/memories", json={"memory": "likes tea", "topics": ["drinks"], "user_id": "wire-user"})
        body = created.json()
        listed = client.get("/memories", params={"user_id": "wire-user"})
        topics = client.get("/memory_topics", params={"user_id": "wire-user"})
        stats = client.get("/user_memory_stats")
        one = client.get(f"/memories/{body.get('memory_id')}", params={"user_id": "wire-user"})
        patched = client.patch(f"/memories/{body.get('memory_id')}", json={"memory": "likes green tea", "user_id": "wire-user"})
        deleted = client.delete(f"/memories/{body.get('memory_id')}", params={"user_id": "wire-user"})
        return {
            "create": (created.status_code, _keys(body)), "list": (listed.status_code, _keys(listed.json()), _keys((listed.json().get("data") or [{}])[0])),
            "topics": (topics.status_code, topics.json()), "stats": (stats.status_code, _keys(stats.json())),
            "get": (one.status_code, _keys(one.json())), "patch": (patched.status_code, patched.json().get("memory")),
            "delete": deleted.status_code,
        }

    def more_reads() -> Observation:
        first = runs["first"]
        one = client.get(f"/sessions/wire-1/runs/{first['run_id']}")
        team_view = client.get("/sessions", params={"type": "team"})
        ascending = client.get("/sessions", params={"sort_by": "created_at", "sort_order": "asc", "limit": 1, "page": 1})
        config = client.get("/config").json()
        return {
            "one_run": (one.status_code, _keys(one.json())),
            "team_sessions": (team_view.status_code, team_view.json().get("data"), _keys(team_view.json().get("meta"))),
            "ascending": (ascending.status_code, ascending.json()["meta"]["limit"], len(ascending.json()["data"])),
            "config": _keys(config), "info": _keys(client.get("/info").json()),
            "unknown_run": (lambda r: (r.status_code, r.json()))(client.get("/agents/bench-agent/runs/nope", params={"session_id": "wire-1"})),
            "cancel_unknown": (lambda r: (r.status_code, r.json()))(client.post("/agents/bench-agent/runs/nope/cancel")),
            "unknown_session": (lambda r: (r.status_code, r.json()))(client.get("/sessions/nope")),
        }

    def bulk_deletes() -> Observation:
        client.post("/sessions", json={"session_id": "wire-gone-1"})
        client.post("/sessions", json={"session_id": "wire-gone-2"})
        sessions_gone = client.request("DELETE", "/sessions", json={"session_ids": ["wire-gone-1", "wire-gone-2"], "session_types": ["agent", "agent"]})
        made = [client.post("/memories", json={"memory": f"m{i}", "user_id": "wire-bulk"}).json().get("memory_id") for i in range(2)]
        memories_gone = client.request("DELETE", "/memories", json={"memory_ids": made, "user_id": "wire-bulk"})
        left = client.get("/memories", params={"user_id": "wire-bulk"}).json()
        return {"sessions": sessions_gone.status_code, "memories": memories_gone.status_code, "memories_left": left["meta"]["total_count"]}

    return [
        ("run", run), ("streamed run", streamed), ("poll", poll), ("sessions", sessions), ("session", session),
        ("session runs", session_runs), ("regenerate", regenerate), ("follow-up", follow_up), ("checkpoints", checkpoints),
        ("checkpoint snapshot", snapshot), ("streamed follow-up", streamed_follow_up), ("bad continue_from", bad_boundary), ("session fork", fork),
        ("session create, rename, update, delete", session_crud), ("memories", memories),
        ("more reads", more_reads), ("bulk deletes", bulk_deletes),
        ("errors", errors),  # last: AgentOS closes the connection after its 500
    ]


def observe(base_url: str) -> dict[str, Observation]:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        found = {}
        for name, probe in scenarios(client):
            try:
                found[name] = probe()
            except Exception as exc:  # a missing key or a failed call is itself the finding
                found[name] = {"failed": f"{type(exc).__name__}: {exc}"}
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, SQLite files)")
    parser.add_argument("--venv", default="/tmp/agentos-bench-venv")
    args = parser.parse_args()
    # What bench.compare's Bench reads, with its defaults: SQLite on tmpfs, unpinned.
    bench = Bench(argparse.Namespace(on_disk=False, db="sqlite", keep=args.keep, venv=args.venv, site_env=[]))
    bench.server_pin = bench.client_pin = []
    port = free_port()
    model = Model(process=bench.start("fake-openai", [sys.executable, "-m", "bench.fake_openai", "--port", str(port)]), url=f"http://127.0.0.1:{port}")
    results: dict[str, dict[str, Observation]] = {}
    try:
        bench.wait_healthy("fake-openai", model.process, model.url)
        for build in (agentos_server, site_server):
            server = build(bench, model)
            db = bench.database(f"wire-{server.name}")
            server.prepare(db)
            port = free_port()
            process = bench.start(f"wire-{server.name}", server.command(db, port), server.env(db))
            try:
                bench.wait_healthy(server.name, process, f"http://127.0.0.1:{port}")
                results[server.name] = observe(f"http://127.0.0.1:{port}")
            finally:
                stop(process)
    finally:
        stop(model.process)
        bench.finish()
    differences = 0
    for name, theirs in results["agentos"].items():
        ours = results["site"].get(name)
        for field in sorted(set(theirs) | set(ours or {})):
            a, b = theirs.get(field), (ours or {}).get(field)
            if a == b:
                print(f"  same  {name}: {field}")
            elif (name, field) in DELIBERATE:
                print(f"  known {name}: {field}: {DELIBERATE[name, field]} (AgentOS {a}, Agno Site {b})")
            else:
                differences += 1
                print(f"  DIFF  {name}: {field}\n          AgentOS:   {json.dumps(a, default=str)}\n          Agno Site: {json.dumps(b, default=str)}")
    print(f"\n{differences} difference(s)")
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
