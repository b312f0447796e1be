"""py-spy on the process that executes background runs, and a summary of what it saw."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from .background_deploy import Deployment
from .compare import ROOT, stop
from .http_load import cpus_allowed


def start_profiler(deployment: Deployment, out: Path) -> list[tuple[subprocess.Popen, Path]]:
    py_spy = str(ROOT / ".venv" / "bin" / "py-spy")
    profilers = []
    for number, pid in enumerate(deployment.executing_pids()):
        path = out.with_suffix(f".{number}.txt")
        command = [py_spy, "record", "--gil", "--format", "raw", "--pid", str(pid), "--output", str(path)]
        # On the other CPU than the profiled process, so sampling does not take its time.
        pin = ["taskset", "-c", "0" if cpus_allowed(pid) == "1" else "1"] if deployment.bench.client_pin else []
        profilers.append((deployment.bench.start(f"py-spy-{number}", command, pin=pin), path))
    return profilers


def stop_profiler(profilers: list[tuple[subprocess.Popen, Path]]) -> None:
    for process, _ in profilers:
        os.killpg(process.pid, signal.SIGINT)  # py-spy writes its output on SIGINT
    for process, _ in profilers:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            stop(process)


# The project's own packages: the frames worth reading in a profile (the rest is framework).
PROJECT_PACKAGES = tuple(f"{path.name}/" for path in ROOT.iterdir() if (path / "__init__.py").exists())


def profile_summary(paths: list[Path], top: int = 20) -> dict[str, Any]:
    """Shares of the GIL-holding samples: per function of the project's own code (inclusive: anywhere
    on the stack), per leaf function (self), and off the main thread (a thread pool's event loops)."""
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    total = threads = 0
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            samples = int(count)
            total += samples
            # A frame reads "function (path/to/file.py:line)"; the line number is dropped.
            frames = [frame.rsplit(":", 1)[0] + ")" if ":" in frame else frame for frame in stack.split(";")]
            if frames[0].startswith("Thread._bootstrap"):
                threads += samples
            for frame in {f for f in frames if f.partition(" (")[2].startswith(PROJECT_PACKAGES)}:
                inclusive[frame] = inclusive.get(frame, 0) + samples
            own[frames[-1]] = own.get(frames[-1], 0) + samples

    def ranked(counts: dict[str, int]) -> list[tuple[str, float]]:
        best = sorted(counts.items(), key=lambda item: -item[1])[:top]
        return [(frame, round(100 * n / total, 1)) for frame, n in best]

    return {
        "samples": total,
        "off_main_thread_pct": round(100 * threads / total, 1) if total else None,
        "project_inclusive_pct": ranked(inclusive),
        "self_pct": ranked(own),
    }
