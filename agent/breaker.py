"""A circuit breaker for a remote endpoint (the chat model, the embeddings).

A hung endpoint used to cost every turn its whole budget, and a refused one a second and a half of
retries, turn after turn. After `failures` consecutive calls that could not reach the endpoint (timeouts,
connection errors, or the caller giving up on a call still waiting) the circuit opens: calls are skipped
at once for `cooldown_seconds` and the caller answers without the endpoint. Then one call is let through
as a probe (half-open): an answer closes the circuit, a failure opens it for another cooling period. Any
answer from the endpoint, an HTTP error status too, counts as reached: the SDK's retries deal with
429 and 5xx; this is about whether the endpoint is there at all.

retrieval/ (the embedder) takes a breaker without importing this module; handlers/metrics reads every
live breaker through `circuits()`."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import IntEnum

log = logging.getLogger(__name__)


class State(IntEnum):
    """Ordered by how bad: the metric reports the number."""

    CLOSED = 0
    HALF_OPEN = 1   # one probe call in flight; the others are skipped
    OPEN = 2


class Breaker:
    """Single event loop, no locks: every method runs between awaits. `clock` is injectable for tests."""

    def __init__(self, endpoint: str, failures: int = 3, cooldown_seconds: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        if failures < 1 or cooldown_seconds <= 0:
            raise ValueError("a breaker needs failures >= 1 and a positive cooldown")
        self.endpoint, self.failures, self.cooldown_seconds = endpoint, failures, cooldown_seconds
        self._clock = clock
        self.state = State.CLOSED
        self.consecutive = 0       # calls in a row that did not reach the endpoint
        self.opened_at = 0.0
        self.opened_total = 0      # times the circuit opened (a failed probe re-opens it: counted too)
        self.skipped_total = 0     # calls skipped while open or while a probe was in flight
        _LIVE.add(self)

    def allow(self) -> bool:
        """May a call go to the endpoint now? After the cooling period the first caller is the probe
        (`probing` is then true until its outcome is recorded); a refused caller must not call."""
        if self.state is State.OPEN and self._clock() - self.opened_at >= self.cooldown_seconds:
            self.state = State.HALF_OPEN
            log.info("circuit half-open: probing the %s endpoint", self.endpoint)
            return True
        if self.state is State.CLOSED:
            return True
        self.skipped_total += 1
        return False

    @property
    def probing(self) -> bool:
        return self.state is State.HALF_OPEN

    def retry_in(self) -> float:
        """Seconds until the next probe (0 when closed or probing)."""
        if self.state is not State.OPEN:
            return 0.0
        return max(self.cooldown_seconds - (self._clock() - self.opened_at), 0.0)

    def why_skipped(self) -> str:
        """The reason given for a skipped call (the turn's degraded reason, the search's note)."""
        if self.state is State.HALF_OPEN:
            return f"circuit open: the {self.endpoint} endpoint is being probed by another call"
        return (f"circuit open: the {self.endpoint} endpoint did not answer {_calls(self.consecutive)} in a row; "
                f"skipped for {self.retry_in():.0f} s more")

    def reached(self) -> None:
        """The endpoint answered (whatever it said): the circuit closes."""
        if self.state is not State.CLOSED:
            log.warning("circuit closed: the %s endpoint answers again", self.endpoint)
        self.state, self.consecutive = State.CLOSED, 0

    def unreachable(self) -> None:
        """A timeout, a connection error, or a call its caller stopped waiting for."""
        self.consecutive += 1
        if self.state is State.HALF_OPEN or (self.state is State.CLOSED and self.consecutive >= self.failures):
            self.state, self.opened_at = State.OPEN, self._clock()
            self.opened_total += 1
            log.warning("circuit open: the %s endpoint did not answer %s in a row; skipping it for %.0f s",
                        self.endpoint, _calls(self.consecutive), self.cooldown_seconds)

    @contextmanager
    def watch(self, unreachable: tuple[type[BaseException], ...]) -> Iterator[None]:
        """Record the outcome of one allowed call: an exception of the `unreachable` kinds (list
        asyncio.CancelledError there to count a caller's deadline) is a failure; anything else, raised
        or returned, means the endpoint answered."""
        try:
            yield
        except unreachable:
            self.unreachable()
            raise
        except BaseException:
            self.reached()
            raise
        self.reached()


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


_LIVE: weakref.WeakSet[Breaker] = weakref.WeakSet()


@dataclass(frozen=True)
class Circuit:
    """One endpoint's breakers summed up (a process normally has one per endpoint)."""

    endpoint: str
    state: State
    opened_total: int
    skipped_total: int


def circuits() -> list[Circuit]:
    """Every live breaker, one line per endpoint: the worst state, the counters summed."""
    by_endpoint: dict[str, Circuit] = {}
    for breaker in list(_LIVE):
        seen = by_endpoint.get(breaker.endpoint)
        by_endpoint[breaker.endpoint] = Circuit(
            breaker.endpoint, max(breaker.state, seen.state) if seen else breaker.state,
            breaker.opened_total + (seen.opened_total if seen else 0),
            breaker.skipped_total + (seen.skipped_total if seen else 0))
    return sorted(by_endpoint.values(), key=lambda c: c.endpoint)
