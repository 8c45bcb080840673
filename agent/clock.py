"""The shop's clock: its time zone (Asia/Shanghai), and now and today there. Service hours, "today" in
analytics and demo data, audit export dates and the operators' day all read it from here. db/ imports
nothing of ours, so it names the same zone itself for the orders' stored local times."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date, datetime
from zoneinfo import ZoneInfo

SHANGHAI = ZoneInfo("Asia/Shanghai")


def now_shanghai(clock: Callable[[], float] = time.time) -> datetime:
    """Now in the shop's time zone; `clock` (seconds since the epoch) is injectable for tests."""
    return datetime.fromtimestamp(clock(), SHANGHAI)


def today_shanghai(clock: Callable[[], float] = time.time) -> date:
    return now_shanghai(clock).date()


def start_of_day(moment: datetime) -> datetime:
    """Midnight in Asia/Shanghai of the shop's day that `moment` falls in."""
    return moment.astimezone(SHANGHAI).replace(hour=0, minute=0, second=0, microsecond=0)


def shop_iso(iso: str | None) -> str:
    """A stored UTC ISO time as ISO 8601 in Asia/Shanghai ("2026-11-29T14:20:05.000+08:00"); text that is
    not a time is given back as it is."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if moment.tzinfo is None:
        return iso
    return moment.astimezone(SHANGHAI).isoformat(timespec="milliseconds")
