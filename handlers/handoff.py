"""The operators' desk: hands a customer to a person in the operators' forum supergroup. One topic per
customer (created once, reopened later, recreated if deleted) opening with a card; messages copied
both ways while the bot stays silent; claim and close; the idle timeout; what the customer is told."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram import Bot
from aiogram.exceptions import TelegramAPIError, TelegramBadRequest, TelegramForbiddenError
from aiogram.types import Message, User

from agent.conversation import Conversation, CustomerCard, Handoff
from agent.handoff import Claim, HandoffStore, Mode, ServiceHours
from handlers import buttons, texts
from handlers.delivery.metrics import HANDOFFS
from handlers.replies import send_answer
from handlers.voice import Voice

log = logging.getLogger(__name__)

ALBUM_WAIT_SECONDS = 1.0          # an album arrives as several updates: copy them together
TOPIC_GONE = ("thread not found", "topic_id_invalid", "topic_deleted", "thread_id_invalid")
CARD_TEXT_CHARS = 120
TOPIC_TITLE_CHARS = 120           # Telegram allows 128 (UTF-16 units) in a topic name
CARD_NAME_CHARS = 64
CARD_ID_LINE = "🆔 {chat_id}"
# invisible though not format or control characters: blank or filler glyphs that pad a name unseen
_BLANKS = frozenset("\u2800\u3164\u115f\u1160\uffa0\u034f\u17b4\u17b5\ufffc")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
_MAX_MARKS = 2                    # combining marks kept on one character (no "zalgo" towers)


def _gone(exc: TelegramAPIError) -> bool:
    return any(marker in str(exc).lower() for marker in TOPIC_GONE)


def _closed(exc: TelegramAPIError) -> bool:
    return "topic_closed" in str(exc).lower()


def readable(text: str) -> str:
    """A customer-chosen text as an operator should see it: control, format (zero-width, bidi), private-use
    and line/paragraph separator characters and blank glyphs (U+2800 and the Hangul fillers) removed,
    variation selectors dropped, combining marks capped per character, whitespace runs made one space."""
    out, marks = [], 0
    for ch in text:
        category = unicodedata.category(ch)
        if category in _HIDDEN_CATEGORIES or ch in _BLANKS or unicodedata.name(ch, "").startswith("VARIATION SELECTOR"):
            continue
        if category in ("Mn", "Me"):
            marks += 1
            if marks > _MAX_MARKS or not out:
                continue
        else:
            marks = 0
        out.append(ch)
    return " ".join("".join(out).split())


def _units(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def _clip(text: str, limit: int = CARD_TEXT_CHARS) -> str:
    text = readable(text)
    if _units(text) <= limit:
        return text
    text = text[:limit]
    while _units(text) > limit - 1:
        text = text[:-1]
    return text + "…"


def topic_title(chat_id: int | str, name: str | None) -> str:
    """The operators' topic of a chat: its id first, then the customer's name, cleaned; only the name is cut."""
    head = str(chat_id)
    name = readable(name or "")
    if not name or name == head:
        return head
    return f"{head} · {_clip(name, TOPIC_TITLE_CHARS - _units(head) - 3)}"


def format_card(name: str, user_id: str, reason: str, card: CustomerCard, chat_id: int | str | None = None) -> str:
    shown = _clip(name, CARD_NAME_CHARS) or str(user_id)
    lines = [CARD_ID_LINE.format(chat_id=chat_id if chat_id is not None else user_id),
             texts.CARD_TITLE.format(name=shown, user_id=user_id), texts.CARD_REASON.get(reason, reason), ""]
    lines.append(texts.CARD_TURNS if card.turns else texts.CARD_NO_TURNS)
    for turn in card.turns:
        lines += [f"顾客：{_clip(turn.user)}", f"机器人：{_clip(turn.assistant)}"]
    if card.focus:
        lines += ["", texts.CARD_FOCUS.format(names="、".join(card.focus))]
    lines.append("")
    if card.orders:
        lines.append(texts.CARD_ORDERS)
        for order in card.orders:
            items = "、".join(f"{i.product_name}×{i.quantity}" for i in order.items)
            lines.append(f"{order.order_id} {order.created_at[:10]} {order.status} {items} 实付{order.total}元")
    else:
        lines.append(texts.CARD_NO_ORDERS)
    return "\n".join(lines)


@dataclass
class Desk:
    bot: Bot
    store: HandoffStore
    conversation: Conversation
    operator_chat_id: int | None = None
    hours: ServiceHours = field(default_factory=lambda: ServiceHours.parse("09:00-21:00"))
    idle_seconds: float = 30 * 60
    contact_text: str = ""            # the store policy on reaching a person, when there is no desk
    audit: object | None = None
    clock: Callable[[], float] = time.time
    _albums: dict[str, list[Message]] = field(default_factory=dict)
    _tasks: set[asyncio.Task] = field(default_factory=set)

    @property
    def enabled(self) -> bool:
        return self.operator_chat_id is not None

    def _audit(self, kind: str, chat_id: int | str, **fields) -> None:
        if self.audit is not None:
            self.audit.event(kind, str(chat_id), **fields)

    # --- the customer's side -------------------------------------------------------------------------

    @property
    def voice(self) -> Voice:
        """What the shop tells the customer, given this desk."""
        return Voice(self.enabled, self.contact_text, self.hours, self.clock)

    async def start(self, chat_id: int, user: User | None, reason: str) -> None:
        """The customer asked for a person outside a message (the 转人工 button): mute the bot for this
        chat, open the customer's topic with a card, tell the customer."""
        user_id = str(user.id) if user else str(chat_id)
        if not self.enabled:
            reply = Handoff("no_desk")
        else:
            started = await self.store.begin(str(chat_id), user_id, user.full_name if user else user_id, self.clock())
            reply = Handoff("started" if started else "already")
        await self.deliver(chat_id, user_id, reason, reply)

    async def deliver(self, chat_id: int, user_id: str, reason: str, reply: Handoff) -> None:
        """A handoff decided (here or by the conversation): a started one opens the customer's topic with a
        card; the customer is told what happens."""
        if reply.status == "started":
            self._audit("handoff_start", chat_id, user_id=user_id, reason=reason)
            HANDOFFS.inc()
            try:
                await self._topic(chat_id, reason=reason, fresh=True)
            except TelegramAPIError:   # the chat stays muted; the next customer message tries the topic again
                log.exception("chat %s: could not open the operators' topic", chat_id)
        for outgoing in self.voice.render(reply):
            await send_answer(self.bot, chat_id, outgoing.text)

    async def to_operators(self, message: Message) -> None:
        """Copy a customer's message (any kind; an album as one) into their topic."""
        chat_id = message.chat.id
        await self.store.touch(str(chat_id), self.clock())
        if message.media_group_id:
            group = self._albums.get(message.media_group_id)
            if group is not None:
                group.append(message)
                return
            self._albums[message.media_group_id] = [message]
            task = asyncio.create_task(self._album(message.media_group_id))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        await self._copy_in([message])

    async def _album(self, group_id: str) -> None:
        await asyncio.sleep(ALBUM_WAIT_SECONDS)
        try:
            await self._copy_in(self._albums.pop(group_id))
        except Exception:   # noqa: BLE001 - a background task must log, not vanish
            log.exception("album %s could not be copied to the operators", group_id)

    async def _copy_in(self, messages: list[Message]) -> None:
        chat_id = messages[0].chat.id
        ids = sorted(m.message_id for m in messages)
        for attempt in range(2):
            thread = await self._topic(chat_id, reason="asked", fresh=False)
            try:
                if len(ids) == 1:
                    await self.bot.copy_message(self.operator_chat_id, chat_id, ids[0], message_thread_id=thread)
                else:
                    await self.bot.copy_messages(self.operator_chat_id, chat_id, ids, message_thread_id=thread)
                break
            except TelegramBadRequest as exc:
                if attempt or not (_gone(exc) or _closed(exc)):
                    raise
                await self._topic_trouble(chat_id, thread, exc)
        for message in messages:
            self._audit("relay", chat_id, direction="to_operators", message_id=message.message_id,
                        text=message.text or message.caption or message.content_type)

    async def _topic_trouble(self, chat_id: int, thread: int, exc: TelegramAPIError) -> None:
        """A closed topic is reopened; a deleted one is forgotten (the next call makes a new one)."""
        if _closed(exc):
            with contextlib.suppress(TelegramBadRequest):
                await self.bot.reopen_forum_topic(self.operator_chat_id, thread)
        else:
            log.warning("chat %s: the operators' topic %s is gone; opening a new one", chat_id, thread)
            await self.store.set_topic(str(chat_id), 0)

    async def _topic(self, chat_id: int, *, reason: str, fresh: bool) -> int:
        """The customer's topic: reopened on a new handoff (`fresh`), created (with the card) when there
        is none or Telegram says it is gone. One creation per chat at a time, across processes."""
        if not fresh:
            known = (await self.store.get(str(chat_id))).topic_id
            if known:
                return known   # the usual relay: no lock needed
        async with self.store.topic_lock(str(chat_id)):
            state = await self.store.get(str(chat_id))
            thread = state.topic_id or None
            if thread and fresh:
                try:
                    await self.bot.reopen_forum_topic(self.operator_chat_id, thread)
                except TelegramBadRequest as exc:
                    if _gone(exc):
                        thread = None
                    elif "not_modified" not in str(exc).lower():
                        raise
            created = thread is None
            if created:
                topic = await self.bot.create_forum_topic(self.operator_chat_id, topic_title(chat_id, state.name))
                thread = topic.message_thread_id
                await self.store.set_topic(str(chat_id), thread)
            if created or fresh:
                card = await self.conversation.card(str(chat_id), state.user_id or str(chat_id))
                await send_answer(self.bot, self.operator_chat_id,
                                  format_card(state.name or str(chat_id), state.user_id or str(chat_id), reason, card,
                                              chat_id),
                                  thread_id=thread, reply_markup=buttons.operator_card(chat_id))
            return thread

    # --- the operators' side -------------------------------------------------------------------------

    async def to_customer(self, message: Message) -> None:
        """Copy an operator's message in a customer's topic to that customer (no operator name shows)."""
        chat = await self.store.chat_of_topic(message.message_thread_id)
        if chat is None:
            return
        state = await self.store.get(chat)
        if not state.muted:
            await self._note(message.message_thread_id, texts.TOPIC_CLOSED.format(reason="消息未发送"))
            return
        if state.mode is Mode.WAITING and \
                await self.store.claim(chat, message.from_user.id, self.clock()) is Claim.CLAIMED:
            await self._joined(int(chat), message.from_user)   # writing in the topic claims it
        await self.store.touch(chat, self.clock())
        try:
            await self.bot.copy_message(int(chat), self.operator_chat_id, message.message_id)
        except TelegramForbiddenError:
            await self._note(message.message_thread_id, texts.TOPIC_BLOCKED)
            self._audit("relay", chat, direction="to_customer", operator_id=message.from_user.id, delivered=False,
                        text=message.text or message.caption or message.content_type)
            return
        except TelegramBadRequest as exc:
            await self._note(message.message_thread_id, texts.TOPIC_NOT_DELIVERED.format(reason=exc.message))
            return
        self._audit("relay", chat, direction="to_customer", operator_id=message.from_user.id, delivered=True,
                    text=message.text or message.caption or message.content_type)

    async def claim(self, chat_id: int, operator: User) -> Claim:
        result = await self.store.claim(str(chat_id), operator.id, self.clock())
        if result is Claim.CLAIMED:
            await self._joined(chat_id, operator)
        return result

    async def _joined(self, chat_id: int, operator: User) -> None:
        self._audit("handoff_claim", chat_id, operator_id=operator.id)
        state = await self.store.get(str(chat_id))
        if state.topic_id:
            await self._note(state.topic_id, texts.TOPIC_CLAIMED.format(operator=readable(operator.full_name)))
        await self._tell(chat_id, texts.HANDOFF_JOINED)

    async def close(self, chat_id: int, operator_id: int | None, reason: str,
                    idle_before: float | None = None) -> bool:
        """Give the chat back to the bot: note and close the topic, tell the customer. False when the chat
        was not handed off (or, for the idle sweep, someone wrote meanwhile)."""
        if not await self.store.end(str(chat_id), self.clock(), idle_before=idle_before):
            return False
        state = await self.store.get(str(chat_id))
        self._audit("handoff_end", chat_id, reason=reason, operator_id=operator_id or state.operator_id)
        if state.topic_id:
            why = texts.TOPIC_CLOSED_BY[reason].format(minutes=round(self.idle_seconds / 60))
            await self._note(state.topic_id, texts.TOPIC_CLOSED.format(reason=why))
            with contextlib.suppress(TelegramAPIError):
                await self.bot.close_forum_topic(self.operator_chat_id, state.topic_id)
        await self._tell(chat_id, texts.HANDOFF_ENDED)
        return True

    async def _note(self, thread: int, text: str) -> None:
        with contextlib.suppress(TelegramAPIError):
            await send_answer(self.bot, self.operator_chat_id, text, thread_id=thread)

    async def _tell(self, chat_id: int, text: str) -> None:
        try:
            await send_answer(self.bot, chat_id, text)
        except TelegramForbiddenError:
            state = await self.store.get(str(chat_id))
            if state.topic_id:
                await self._note(state.topic_id, texts.TOPIC_BLOCKED)

    # --- the idle timeout ----------------------------------------------------------------------------

    async def sweep(self) -> int:
        """Hand back every chat with no message either way for `idle_seconds`; how many were."""
        before = self.clock() - self.idle_seconds
        ended = 0
        for chat in await self.store.idle(before):
            ended += await self.close(int(chat), None, "idle", idle_before=before)
        return ended

    async def run_sweeper(self) -> None:
        interval = max(0.2, min(30.0, self.idle_seconds / 4))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception:   # noqa: BLE001 - Redis or Telegram trouble: try again next round
                log.exception("the handoff idle sweep failed")

    async def finish(self) -> None:
        """Shutdown: copy albums still being collected."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
