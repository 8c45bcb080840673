"""A chat's state for one message, read and written as a unit: `sessions.open(chat_id)` loads the memory,
the handoff state and the counters together; `session.commit(outcome)` writes what the turn changed.
`InProcessSessions` composes any memory and handoff stores (the embedded default); the Redis
implementation (handlers/sessions.py) does the same in a few pipelined round trips and settles a durable
delivery in the commit's transaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from agent.handoff import HandoffState, HandoffStore
from agent.memory import ChatMemory, MemoryStore, Turn


@dataclass(frozen=True)
class Outcome:
    """What one message changed: a delivered answer joins the memory (with its focus); an offer of a person
    starts the count of unhelped turns afresh."""
    turn: Turn | None = None
    focus_product_ids: list[str] = field(default_factory=list)
    quantity: int | None = None
    misses_reset: bool = False


class ChatSession(Protocol):
    chat_id: str
    memory: ChatMemory
    handoff: HandoffState        # as read when the session opened

    async def recheck(self, helped: bool) -> tuple[HandoffState, int]:
        """After a turn: the chat's handoff state now (did a person take it meanwhile?) and how many turns
        in a row went unhelped, counting this one."""

    async def hand_off(self, user_id: str, name: str, now: float) -> bool:
        """Give the chat to a person; False when a person has it already."""

    async def commit(self, outcome: Outcome) -> None:
        """Write what the message changed (and settle its delivery, when the sessions know one)."""


class Sessions(Protocol):
    async def open(self, chat_id: str, delivery: object | None = None) -> ChatSession:
        """The chat's state for one message. `delivery`: the channel's receipt for the message, settled
        by `commit`; only sessions built for that channel accept one."""

    async def memory(self, chat_id: str) -> ChatMemory:
        """The chat's memory alone (the operators' card)."""

    async def reset(self, chat_id: str) -> None:
        """Forget the chat's conversation."""


@dataclass
class StoreSession:
    """One message's session over separate stores: a read and a write per store."""
    chat_id: str
    memory: ChatMemory
    handoff: HandoffState
    _memories: MemoryStore
    _handoffs: HandoffStore

    async def recheck(self, helped: bool) -> tuple[HandoffState, int]:
        return await self._handoffs.after_turn(self.chat_id, helped)

    async def hand_off(self, user_id: str, name: str, now: float) -> bool:
        return await self._handoffs.begin(self.chat_id, user_id, name, now)

    async def commit(self, outcome: Outcome) -> None:
        if outcome.turn is not None:
            await self._memories.append(self.chat_id, outcome.turn, outcome.focus_product_ids, outcome.quantity)
        if outcome.misses_reset:
            await self._handoffs.misses(self.chat_id, helped=True)


class InProcessSessions:
    """Sessions over a memory store and a handoff store, each read and written on its own: the embedded
    default (in-process stores), and any pair of stores where round trips do not matter."""

    def __init__(self, memories: MemoryStore, handoffs: HandoffStore):
        self.memories, self.handoffs = memories, handoffs

    async def open(self, chat_id: str, delivery: object | None = None) -> StoreSession:
        if delivery is not None:
            raise ValueError("these sessions cannot settle a durable delivery; build the channel's own sessions")
        return StoreSession(chat_id, await self.memories.load(chat_id), await self.handoffs.get(chat_id),
                            self.memories, self.handoffs)

    async def memory(self, chat_id: str) -> ChatMemory:
        return await self.memories.load(chat_id)

    async def reset(self, chat_id: str) -> None:
        await self.memories.reset(chat_id)
