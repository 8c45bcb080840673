"""Redis commands of one store carried in another store's round trip: the carrier adds them to its
pipeline with `queue` and hands their replies to `done` after it has run. A turn reads the chat's handoff
state and memory in one round trip this way, and writes the memory with the inbox's done-marker and
acknowledgement in one transaction."""

from __future__ import annotations

from typing import Any, Protocol


class Piggyback(Protocol):
    def queue(self, pipe: Any) -> None:
        """Add this store's commands to the carrier's pipeline."""

    def done(self, replies: list[Any]) -> None:
        """Receive the replies of exactly the commands `queue` added, in order."""


def carry(pipe: Any, riders: list[Piggyback | None]) -> list[tuple[Piggyback, int]]:
    """Queue every rider after the carrier's own commands; returns (rider, how many commands it added)."""
    carried = []
    for rider in riders:
        if rider is not None:
            before = len(pipe.command_stack)
            rider.queue(pipe)
            carried.append((rider, len(pipe.command_stack) - before))
    return carried


def deliver(replies: list[Any], own: int, carried: list[tuple[Piggyback, int]]) -> list[Any]:
    """Hand each rider its replies; returns the carrier's own (the first `own`)."""
    position = own
    for rider, count in carried:
        rider.done(replies[position:position + count])
        position += count
    return replies[:own]
