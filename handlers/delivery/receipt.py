"""What settles one inbox entry once its update was handled — kept apart from the inbox itself so that the
sessions that write it in their transaction (and the console, which has none) load no Telegram client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GROUP = "workers"
DONE_SECONDS = 24 * 3600


@dataclass
class Entry:
    """An inbox entry being handled: where it is, whether this is its first delivery (nobody can have
    handled it before), and whether the gate has acknowledged it already."""
    stream: str
    id: Any
    first: bool
    acked: bool = False


@dataclass(frozen=True)
class Receipt:
    """What settles one update from the inbox once it was handled: its done-marker and its entry's
    acknowledgement. The Redis sessions write both in the turn's own transaction."""
    done_key: str
    entry: Entry

    def queue(self, pipe) -> None:
        pipe.set(self.done_key, 1, ex=DONE_SECONDS)
        pipe.xack(self.entry.stream, GROUP, self.entry.id)

    def fence(self, pipe) -> None:
        """A write to the done-marker's slot after the transaction that settled it: a WAIT behind it covers the
        transaction (handlers/delivery/replicas.py)."""
        pipe.set(self.done_key, 1, ex=DONE_SECONDS)
