"""Date and time tools with an injectable clock."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.tools.function import tool
from engine.tools.toolkit import Toolkit


class DateTimeTools(Toolkit):
    id = "datetime"
    name = "datetime"

    def __init__(self, *, clock: Callable[[], float] = time.time, default_timezone: str = "UTC", **kwargs: object) -> None:
        self.clock = clock
        self.default_timezone = default_timezone
        _zone(default_timezone)
        super().__init__(**kwargs)  # type: ignore[arg-type]

    @tool
    def get_current_datetime(self, timezone: str | None = None) -> str:
        """Get the current date and time in a timezone.

        Args:
            timezone: IANA timezone such as "Europe/Paris"; the toolkit's default when omitted.
        """
        name = timezone or self.default_timezone
        now = datetime.fromtimestamp(self.clock(), tz=dt_timezone.utc).astimezone(_zone(name))
        return json.dumps(
            {
                "timezone": name,
                "datetime": now.isoformat(timespec="seconds"),
                "date": now.date().isoformat(),
                "time": now.strftime("%H:%M:%S"),
                "weekday": now.strftime("%A"),
                "utc_offset": now.strftime("%z"),
            }
        )


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"Unknown timezone {name!r}; use an IANA name such as 'Europe/Paris'") from None
