"""Instruction counts of parts of a Python process, from valgrind's callgrind.

CPU time on a shared machine moves ±20% from one block of runs to the next; the number of
instructions a block executes does not depend on what else the machine does. A bench re-runs
itself under ``valgrind --tool=callgrind --instr-atstart=no`` (``run_under_callgrind``): set-up
runs uninstrumented (about 5x slower than native instead of 50x), and the bench brackets each
block it measures with ``Counter.block()``, which zeroes callgrind's counters before it and
dumps them after it. Every thread of the process is counted (callgrind runs them one at a
time), so work a block hands to a background thread counts if it is finished inside the block.

The bracketing needs callgrind's client requests, which are C macros: a six-line helper is
compiled with the system's C compiler against valgrind's header (``valgrind/callgrind.h``).
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_SOURCE = r"""
#include <valgrind/callgrind.h>
void agno_cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void agno_cg_zero(void) { CALLGRIND_ZERO_STATS; }
void agno_cg_dump(void) { CALLGRIND_DUMP_STATS; }
"""
_ENV = "AGNO_BENCH_CALLGRIND_DIR"


def under_callgrind() -> bool:
    return bool(os.environ.get(_ENV))


def run_under_callgrind(module: str, args: Sequence[str], env: dict[str, str] | None = None) -> tuple[str, list[int]]:
    """Run ``python -m module *args`` under callgrind (with ``env`` added to the environment);
    its stdout, and the instructions of each block it measured, in order."""
    folder = Path(tempfile.mkdtemp(prefix="agno-callgrind-"))
    try:
        library = folder / "agno_cg.so"
        source = folder / "agno_cg.c"
        source.write_text(_SOURCE)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
        env = {**os.environ, **(env or {}), _ENV: str(folder), "PYTHONHASHSEED": "0"}
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={folder}/out",
            sys.executable, "-m", module, *args,
        ]
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"callgrind run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        counts = []
        for dump in sorted(folder.glob("out.*"), key=lambda path: int(path.suffix[1:])):
            match = re.search(r"^totals:\s+(\d+)", dump.read_text(errors="replace"), re.MULTILINE)
            counts.append(int(match.group(1)) if match else 0)
        return done.stdout, counts
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Counter:
    """In the process ``run_under_callgrind`` started: brackets the blocks it measures."""

    def __init__(self) -> None:
        self.library = ctypes.CDLL(str(Path(os.environ[_ENV]) / "agno_cg.so"))
        self.started = False

    def start(self) -> None:
        """Instrument from here on (the first block does it anyway). Starting throws away
        valgrind's translations of the code run so far: start before a warm-up, so that the
        first counted block does not pay for translating everything again."""
        if not self.started:
            self.library.agno_cg_start()
            self.started = True

    @contextmanager
    def block(self) -> Iterator[None]:
        self.start()
        self.library.agno_cg_zero()
        yield
        self.library.agno_cg_dump()
