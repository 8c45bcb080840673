"""One customer conversation as a service: `Conversation.handle` decides everything about one customer
message — the chat is with a person, the customer asks for one, the message is too long or too fast, the
turn, a person took the chat during the turn, two unhelped turns in a row — and returns a typed `Reply`
that a channel (Telegram, the console) renders its own way. `done` then writes what the message changed,
after delivery. Nothing here knows a channel."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from redis.exceptions import RedisError

from agent.handoff import asks_for_person
from agent.memory import ChatMemory, Turn
from agent.session import ChatSession, Outcome, Sessions
from agent.trace import Signs, TurnResult
from agent.turn import Agent
from db.catalog import ProductFilter, find_products
from db.facts import Order
from db.orders import list_orders
from db.overview import CatalogOverview, catalog_overview

log = logging.getLogger(__name__)

MISSES_BEFORE_OFFER = 2   # unhelped turns in a row before a person is offered


@dataclass(frozen=True)
class Limits:
    max_message_chars: int = 1000


@dataclass(frozen=True)
class Incoming:
    """One customer text message, as any channel sees it."""
    chat_id: str
    user_id: str
    text: str
    sent_at: float | None = None   # when the customer sent it (unix time); None: now
    update_id: int | None = None   # the channel's id for the update that brought it, kept in the audit
    message_id: int | None = None
    user_name: str = ""


@dataclass(frozen=True)
class Answer:
    """The turn's released answer; `offer_person`: the second unhelped turn in a row."""
    result: TurnResult
    offer_person: bool = False


@dataclass(frozen=True)
class Handoff:
    """The customer asked for a person: `started` (the chat is now theirs), `already` (a person has it),
    or `no_desk` (nobody answers here: tell the customer how to reach the shop)."""
    status: Literal["started", "already", "no_desk"]


@dataclass(frozen=True)
class Refusal:
    """Not answered, with a reason the customer is told: too long, too fast, the turn failed."""
    reason: Literal["too_long", "slow_down", "failed"]
    limit: int = 0


@dataclass(frozen=True)
class Silent:
    """Nothing to say: a person has the chat (the channel relays the message to them), it was sent while a
    person had the chat, the customer is over the rate limit (told once already), or a person took the
    chat during the turn (`result` is audited, not sent)."""
    reason: Literal["with_person", "sent_while_with_person", "rate_limited", "taken_during_turn"]
    result: TurnResult | None = None


Reply = Answer | Handoff | Refusal | Silent
RateCheck = Callable[[str], Awaitable[str]]   # user id → "ok" | "notify" | "drop"


class Turns(Protocol):
    """What answers a customer message and reads its signs for the audit: the agent, or a process running one."""
    async def answer(self, text: str, *, user_id: str, memory: ChatMemory | None = None) -> TurnResult: ...
    async def signs(self, text: str, result: TurnResult, earlier: list[str]) -> Signs: ...


@dataclass(frozen=True)
class CustomerCard:
    """What an operator needs on taking a conversation over: recent turns, the focus, recent orders."""
    turns: tuple[Turn, ...]
    focus: tuple[str, ...]          # product names
    orders: tuple[Order, ...]


async def _always_ok(user_id: str) -> str:
    return "ok"


class Conversation:
    def __init__(self, agent: Agent, sessions: Sessions, audit: Any = None, *, limits: Limits = Limits(),
                 rate: RateCheck | None = None, desk: bool = False, clock: Callable[[], float] = time.time,
                 turns: Turns | None = None):
        """`rate`: the rate limit's verdict per user; `desk`: people answer handed-off chats here; `turns`:
        what answers a turn and reads its signs (default the agent; handlers/turn_process.py: a child)."""
        self.agent, self.sessions, self.audit = agent, sessions, audit
        self.turns: Turns = turns or agent
        self.limits, self.rate, self.desk, self.clock = limits, rate or _always_ok, desk, clock
        self._overview: CatalogOverview | None = None

    async def overview(self) -> CatalogOverview:
        """The catalog served, and example questions from its own products (for greetings), read once."""
        if self._overview is None:
            self._overview = await catalog_overview(self.agent.conn)
        return self._overview

    async def handle(self, message: Incoming, session: ChatSession) -> Reply:
        """The reply to one customer message, with the chat's session (opened by the channel, which
        settles it with `done` after delivering the reply)."""
        state = session.handoff
        if state.muted:
            return Silent("with_person")
        if state.epoch and message.sent_at is not None and message.sent_at < int(state.since):
            self._event("unanswered", message)   # queued up while a person had the chat
            return Silent("sent_while_with_person")
        text = message.text.strip()
        if asks_for_person(text):   # before any model call
            if not self.desk:
                return Handoff("no_desk")
            started = await session.hand_off(message.user_id, message.user_name or message.user_id, self.clock())
            return Handoff("started" if started else "already")
        if len(text) > self.limits.max_message_chars:
            return Refusal("too_long", self.limits.max_message_chars)
        verdict = await self.rate(message.user_id)
        if verdict != "ok":
            return Refusal("slow_down") if verdict == "notify" else Silent("rate_limited")
        try:
            result = await self.turns.answer(text, user_id=message.user_id, memory=session.memory)
        except RedisError:
            raise   # store trouble passes: the channel runs the message again rather than apologise
        except Exception:
            log.exception("turn failed for chat %s", message.chat_id)
            return Refusal("failed")
        now, misses = await session.recheck(result.helped)
        if now.muted or now.epoch != state.epoch:
            log.info("chat %s was handed to a person during the turn: the answer is not sent", message.chat_id)
            return Silent("taken_during_turn", result)
        return Answer(result, offer_person=misses >= MISSES_BEFORE_OFFER)

    async def done(self, message: Incoming, session: ChatSession, reply: Reply) -> None:
        """After delivery: a delivered answer joins the memory and the audit, an undelivered one (a person
        took the chat) the audit only, so the model never sees it later; the session is committed."""
        outcome = Outcome()
        if isinstance(reply, Answer):
            result = reply.result
            outcome = Outcome(Turn(message.text.strip(), result.answer), list(result.focus_product_ids),
                              result.quantity, misses_reset=reply.offer_person)
            await self._record(message, result, delivered=True, earlier=session.memory.turns)
        elif isinstance(reply, Silent) and reply.result is not None:
            await self._record(message, reply.result, delivered=False, earlier=session.memory.turns)
        await session.commit(outcome)

    async def _record(self, message: Incoming, result: TurnResult, delivered: bool, earlier=()) -> None:
        """The turn in the audit, with its signs of a misunderstanding and those this message gives about
        the answer before it (`earlier`: the chat's turns before this one)."""
        if self.audit is None:
            return
        text = message.text.strip()
        signs = await self.turns.signs(text, result, [t.user for t in earlier])
        self.audit.record(chat_id=message.chat_id, user_id=message.user_id, message=text, result=result,
                          update_id=message.update_id, delivered=delivered, flags=signs.own,
                          previous_flags=signs.previous)

    def _event(self, kind: str, message: Incoming) -> None:
        if self.audit is not None:
            self.audit.event(kind, message.chat_id, message_id=message.message_id, text=message.text)

    async def reset(self, chat_id: str) -> None:
        await self.sessions.reset(chat_id)

    async def card(self, chat_id: str, user_id: str) -> CustomerCard:
        memory = await self.sessions.memory(chat_id)
        products = await find_products(self.agent.conn, ProductFilter(), ids=list(memory.focus_product_ids))
        orders = await list_orders(self.agent.conn, user_id)
        return CustomerCard(tuple(memory.turns), tuple(p.product_name for p in products), orders.orders)
