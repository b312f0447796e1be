"""Parse an SSE body into (event name, data) pairs, checking AgentOS's framing on the way."""
from __future__ import annotations

import json
from typing import Any


def parse_sse(raw: str) -> list[tuple[str, dict[str, Any]]]:
    frames = []
    for block in raw.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), block
        frames.append((lines[0][len("event: "):], json.loads(lines[1][len("data: "):])))
    return frames
