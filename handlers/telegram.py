"""aiogram routers and the update gate. Dependencies arrive through the dispatcher's workflow data
(`conversation`, `desk`, `guards`, `sequencer`, `audit`, `limits`, `operators`), never through module
globals."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiogram import BaseMiddleware, Bot, Dispatcher, F, Router
from aiogram.enums import ChatType
from aiogram.exceptions import TelegramBadRequest
from aiogram.filters import Command, CommandStart
from aiogram.types import CallbackQuery, InlineKeyboardMarkup, Message, TelegramObject, Update
from aiogram.utils.chat_action import ChatActionSender
from redis.exceptions import RedisError

from agent.conversation import Conversation
from agent.handoff import asks_for_person
from handlers import buttons, metrics, texts
from handlers.guards import ChatSequencer
from handlers.handoff import Desk
from handlers.operators import Operators, build_operator_router
from handlers.replies import send_answer

log = logging.getLogger(__name__)


FEEDBACK_DAYS = 90
TYPING_AFTER_SECONDS = 1.0


@dataclass(frozen=True)
class Limits:
    max_message_chars: int = 1000


def order_key(update: Update, chat_id: int) -> str:
    """What must stay in order: a chat, or one topic of a forum group (each customer's topic in the
    operators' group is its own conversation; one busy topic must not hold up the others)."""
    message = update.message or (update.callback_query.message if update.callback_query else None)
    thread = getattr(message, "message_thread_id", None) if getattr(message, "is_topic_message", False) or \
        update.callback_query else None
    return f"{chat_id}:{thread}" if thread else str(chat_id)


class UpdateGate(BaseMiddleware):
    """Outer update middleware: per-chat order first (before any other await); then, from the durable
    inbox, the update is handled once (Inbox.handle_once: retries, done-marker, delivery marker); without
    the inbox, duplicates are dropped (Telegram re-sends an update when a webhook answer is late)."""

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        assert isinstance(event, Update)
        chat = data.get("event_chat")
        chat_id = order_key(event, chat.id) if chat is not None else f"update:{event.update_id}"
        sequencer: ChatSequencer = data["sequencer"]
        metrics.UPDATES.inc()
        arrived = time.perf_counter()
        async with sequencer.turn(chat_id):
            metrics.STAGE.labels(stage="queue").observe(time.perf_counter() - arrived)
            inbox = data.get("inbox") if data.get("inbox_mode") else None
            if inbox is not None:
                # from the inbox: duplicates were dropped on arrival, the partition's lease gives this chat to
                # one worker, and only an update already handled (a re-run after a crash) is skipped
                entry = data.get("inbox_entry")
                data["inbox_finish"] = inbox.finisher(event.update_id, entry)
                return await inbox.handle_once(event.update_id, lambda: handler(event, data), entry)
            if not await data["guards"].first_time(event.update_id):
                metrics.DUPLICATES.inc()
                log.info("duplicate update %s ignored", event.update_id)
                return None
            async with data["guards"].chat_lock(chat_id):
                return await handler(event, data)


class HandoffGate(BaseMiddleware):
    """Inner middleware of every customer message: while a person has the chat, the message goes to
    them and no turn runs; a message that queued up while the chat was muted is recorded, not answered.
    Otherwise the handler learns the chat's handoff epoch, to check again before it sends."""

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        assert isinstance(event, Message)
        desk: Desk = data["desk"]
        # with the inbox (Redis), a text turn reads the chat's memory in the same round trip as its state
        memory = data["conversation"].memory
        load = memory.loading(str(event.chat.id)) if event.text and data.get("inbox_mode") and \
            hasattr(memory, "loading") else None
        state = await desk.store.get(str(event.chat.id), also=load)
        data["chat_memory"] = load.memory if load is not None else None
        if state.muted:
            await desk.to_operators(event)
            return None
        if state.epoch and event.date.timestamp() < int(state.since):
            if data.get("audit") is not None:
                data["audit"].event("unanswered", str(event.chat.id), message_id=event.message_id,
                                    text=event.text or event.content_type)
            return None
        data["handoff_epoch"] = state.epoch
        return await handler(event, data)


def build_router() -> Router:
    """The customers' router (private chats only). A fresh router: one can belong to one dispatcher."""
    router = Router(name="customers")
    router.message.filter(F.chat.type == ChatType.PRIVATE)
    router.callback_query.filter(F.message.chat.type == ChatType.PRIVATE)
    router.message.middleware(HandoffGate())

    @router.message(CommandStart())
    async def on_start(message: Message, bot: Bot) -> None:
        await send_answer(bot, message.chat.id, texts.START)

    @router.message(Command("help"))
    async def on_help(message: Message, bot: Bot) -> None:
        await send_answer(bot, message.chat.id, texts.HELP)

    @router.message(Command("reset"))
    async def on_reset(message: Message, bot: Bot, conversation: Conversation) -> None:
        await conversation.reset(str(message.chat.id))
        await send_answer(bot, message.chat.id, texts.RESET)

    @router.message(F.text)
    async def on_text(message: Message, bot: Bot, conversation: Conversation, desk: Desk, guards: Any,
                      limits: Limits, event_update: Update, handoff_epoch: int, chat_memory: Any = None,
                      inbox_finish: Any = None) -> None:
        text = (message.text or "").strip()
        chat_id = message.chat.id
        user_id = str(message.from_user.id) if message.from_user else str(chat_id)
        if asks_for_person(text):   # before any model call
            await desk.start(chat_id, message.from_user, "asked")
            return
        if len(text) > limits.max_message_chars:
            await send_answer(bot, chat_id, texts.TOO_LONG.format(limit=limits.max_message_chars))
            return
        verdict = await guards.rate(user_id)
        if verdict != "ok":
            if verdict == "notify":
                await send_answer(bot, chat_id, texts.SLOW_DOWN)
            return
        try:
            # "typing…" only for a turn that takes a while: a fast one costs no extra request
            async with ChatActionSender.typing(bot=bot, chat_id=chat_id, initial_sleep=TYPING_AFTER_SECONDS):
                result = await conversation.answer(str(chat_id), user_id, text, memory=chat_memory)
        except RedisError:
            raise   # Redis trouble passes: the inbox runs the turn again rather than apologise
        except Exception:
            log.exception("turn failed for chat %s", chat_id)
            await send_answer(bot, chat_id, texts.SORRY)
            return
        # a person may have taken the chat during the turn; and how many turns in a row went unhelped
        state, misses = await desk.store.after_turn(str(chat_id), helped=result.helped)
        delivered = not state.muted and state.epoch == handoff_epoch
        metrics.observe_turn(result, delivered)
        if delivered:
            sending = time.perf_counter()
            await send_answer(bot, chat_id, result.answer, reply_markup=buttons.feedback(event_update.update_id))
            metrics.STAGE.labels(stage="send").observe(time.perf_counter() - sending)
            if misses >= 2:   # twice in a row without help: offer a person instead of going on
                await desk.store.misses(str(chat_id), helped=True)
                if desk.enabled:
                    await send_answer(bot, chat_id, texts.HANDOFF_OFFER, reply_markup=buttons.ask_person())
                else:
                    await send_answer(bot, chat_id, desk.no_desk_text())
        else:
            log.info("chat %s was handed to a person during the turn: the answer is not sent", chat_id)
        await conversation.remember(str(chat_id), user_id, text, result, update_id=event_update.update_id,
                                    delivered=delivered, also=inbox_finish)   # memory, done-marker, ack: one trip

    @router.message()
    async def on_other(message: Message, bot: Bot) -> None:
        await send_answer(bot, message.chat.id, texts.ONLY_TEXT)

    @router.callback_query(buttons.Vote.filter())
    async def on_vote(query: CallbackQuery, callback_data: buttons.Vote, guards: Any, audit: Any, desk: Desk) -> None:
        """👍 / 👎: recorded once per answer (a second press changes nothing), answered at once."""
        first = await guards.claim_once(f"feedback:{callback_data.update_id}", FEEDBACK_DAYS * 24 * 3600)
        up = callback_data.value == "up"
        await query.answer(texts.FEEDBACK_ALREADY if not first else texts.FEEDBACK_THANKS if up else texts.FEEDBACK_SORRY)
        if first:
            metrics.FEEDBACK.labels(value="up" if up else "down").inc()
            await guards.count(f"feedback:{'up' if up else 'down'}")
            if audit is not None:
                audit.event("feedback", str(query.message.chat.id), update_id=callback_data.update_id,
                            value="up" if up else "down", user_id=str(query.from_user.id))
        offer = first and not up and desk.enabled
        await _replace_buttons(query, buttons.ask_person() if offer else None)

    @router.callback_query(buttons.Handoff.filter(F.action == "ask"))
    async def on_ask_person(query: CallbackQuery, desk: Desk) -> None:
        await query.answer()
        await _replace_buttons(query, None)
        await desk.start(query.message.chat.id, query.from_user, "asked")

    @router.callback_query()
    async def on_stale_button(query: CallbackQuery) -> None:
        await query.answer(texts.UNAVAILABLE)

    return router


async def _replace_buttons(query: CallbackQuery, markup: InlineKeyboardMarkup | None) -> None:
    if isinstance(query.message, Message):
        with contextlib.suppress(TelegramBadRequest):   # already changed by an earlier press
            await query.message.edit_reply_markup(reply_markup=markup)


def build_dispatcher(operators: Operators | None = None, **workflow_data: Any) -> Dispatcher:
    """The dispatcher with the gate, the operators' router, then the customers' router; `workflow_data`
    are the handlers' dependencies (`conversation`, `desk`, `guards`, `sequencer`, `audit`, `limits`)."""
    operators = operators or Operators()
    dispatcher = Dispatcher(operators=operators, disable_fsm=True, **workflow_data)   # no FSM states: no FSM step per update
    dispatcher.update.outer_middleware(UpdateGate())
    dispatcher.include_router(build_operator_router(operators))
    dispatcher.include_router(build_router())
    return dispatcher
