"""aiogram routers and the update gate. Dependencies arrive through the dispatcher's workflow data
(`conversation`, `desk`, `guards`, `sequencer`, `audit`, `operators`, and `inbox` for the
workers), never through module globals. What to say to a customer's text is `Conversation.handle`'s
decision; this module only renders it."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram import BaseMiddleware, Bot, Dispatcher, F, Router
from aiogram.dispatcher.flags import get_flag
from aiogram.enums import ChatType
from aiogram.exceptions import TelegramBadRequest
from aiogram.filters import Command, CommandStart
from aiogram.types import CallbackQuery, InlineKeyboardMarkup, Message, TelegramObject, Update
from aiogram.utils.chat_action import ChatActionMiddleware

from agent.conversation import Answer, Conversation, Handoff, Incoming, Silent
from handlers import buttons, texts
from handlers.delivery import metrics
from handlers.delivery.guards import ChatSequencer
from handlers.filters import Inline
from handlers.handoff import Desk
from handlers.operators import Operators, build_operator_router
from handlers.replies import send_answer
from handlers.voice import Voice

log = logging.getLogger(__name__)


FEEDBACK_DAYS = 90
TYPING_AFTER_SECONDS = 1.0


def order_key(update: Update, chat_id: int) -> str:
    """What must stay in order: a chat, or one topic of a forum group (each customer's topic in the
    operators' group is its own conversation; one busy topic must not hold up the others)."""
    message = update.message or (update.callback_query.message if update.callback_query else None)
    thread = getattr(message, "message_thread_id", None) if getattr(message, "is_topic_message", False) or \
        update.callback_query else None
    return f"{chat_id}:{thread}" if thread else str(chat_id)


class UpdateGate(BaseMiddleware):
    """Outer update middleware: per-chat order first (before any other await); then, from the durable
    inbox, the update is handled once (Inbox.handle_once: retries, done-marker, delivery marker) and its
    receipt is the `delivery` a chat session settles; without the inbox, duplicates are dropped (Telegram
    re-sends an update when a webhook answer is late)."""

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
            entry = data.pop("inbox_entry", None)
            if entry is not None:
                # from the inbox: duplicates were dropped on arrival, the partition's lease gives this chat to
                # one worker, and only an update already handled (a re-run after a crash) is skipped
                inbox = data["inbox"]
                data["delivery"] = inbox.receipt(event.update_id, entry)
                return await inbox.handle_once(event.update_id, lambda: handler(event, data), entry)
            if not await data["guards"].first_time(event.update_id):
                metrics.DUPLICATES.inc()
                log.info("duplicate update %s ignored", event.update_id)
                return None
            async with data["guards"].chat_lock(chat_id):
                return await handler(event, data)


class HandoffGate(BaseMiddleware):
    """Inner middleware of the customers' messages that are not a conversation turn (commands, photos…):
    while a person has the chat, the message goes to them and nothing else happens; a message that queued
    up while the chat was muted is recorded, not answered. A text turn decides this in `Conversation.handle`
    (handlers flagged `conversation`)."""

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        assert isinstance(event, Message)
        if get_flag(data, "conversation"):
            return await handler(event, data)
        desk: Desk = data["desk"]
        state = await desk.store.get(str(event.chat.id))
        if state.muted:
            await desk.to_operators(event)
            return None
        if state.epoch and event.date.timestamp() < int(state.since):
            if data.get("audit") is not None:
                data["audit"].event("unanswered", str(event.chat.id), message_id=event.message_id,
                                    text=event.text or event.content_type)
            return None
        return await handler(event, data)


# "typing…" only for a turn that takes a while: a fast one costs no extra request (ChatActionMiddleware)
TYPING = {"action": "typing", "initial_sleep": TYPING_AFTER_SECONDS}


def incoming(message: Message, update: Update) -> Incoming:
    """The channel-neutral form of a customer's text message."""
    user = message.from_user
    return Incoming(str(message.chat.id), str(user.id) if user else str(message.chat.id), message.text or "",
                    sent_at=message.date.timestamp(), update_id=update.update_id, message_id=message.message_id,
                    user_name=user.full_name if user else "")


def build_router() -> Router:
    """The customers' router (private chats only): commands, then the conversation's text turns, then
    everything else. A fresh router: one can belong to one dispatcher."""
    router = Router(name="customers")
    router.message.filter(Inline(F.chat.type == ChatType.PRIVATE))
    router.callback_query.filter(Inline(F.message.chat.type == ChatType.PRIVATE))
    router.message.middleware(HandoffGate())

    @router.message(CommandStart())
    async def on_start(message: Message, bot: Bot, conversation: Conversation) -> None:
        await send_answer(bot, message.chat.id, Voice.greeting((await conversation.overview()).examples))

    @router.message(Command("help"))
    async def on_help(message: Message, bot: Bot) -> None:
        await send_answer(bot, message.chat.id, texts.HELP)

    @router.message(Command("reset"))
    async def on_reset(message: Message, bot: Bot, conversation: Conversation) -> None:
        await conversation.reset(str(message.chat.id))
        await send_answer(bot, message.chat.id, texts.RESET)

    turns = Router(name="customer-turns")
    turns.message.middleware(ChatActionMiddleware())
    router.include_router(turns)

    @turns.message(Inline(F.text), flags={"conversation": True, "chat_action": TYPING})
    async def on_text(message: Message, bot: Bot, conversation: Conversation, desk: Desk,
                      event_update: Update, delivery: Any = None) -> None:
        """A thin adapter: the conversation decides, this renders the reply in Telegram."""
        said = incoming(message, event_update)
        session = await conversation.sessions.open(said.chat_id, delivery)
        reply = await conversation.handle(said, session)
        match reply:
            case Silent(reason="with_person"):
                await desk.to_operators(message)
            case Handoff():
                await desk.deliver(message.chat.id, said.user_id, "asked", reply)
            case Answer(result=result) | Silent(reason="taken_during_turn", result=result) if result is not None:
                metrics.observe_turn(result, isinstance(reply, Answer))
        if not isinstance(reply, Handoff):
            sending = time.perf_counter()
            for outgoing in desk.voice.render(reply):
                markup = buttons.feedback(bot.token, message.chat.id, event_update.update_id) \
                    if outgoing.buttons == "feedback" else \
                    buttons.ask_person() if outgoing.buttons == "ask_person" else None
                await send_answer(bot, message.chat.id, outgoing.text, reply_markup=markup)
            if isinstance(reply, Answer):
                metrics.STAGE.labels(stage="send").observe(time.perf_counter() - sending)
        await conversation.done(said, session, reply)   # memory, audit, done-marker, ack: one write

    rest = Router(name="customers-rest")
    router.include_router(rest)

    @rest.message()
    async def on_other(message: Message, bot: Bot) -> None:
        await send_answer(bot, message.chat.id, texts.ONLY_TEXT)

    @router.callback_query(buttons.Vote.filter())
    async def on_vote(query: CallbackQuery, callback_data: buttons.Vote, bot: Bot, guards: Any, audit: Any,
                      desk: Desk) -> None:
        """👍 / 👎: recorded once per answer (a second press changes nothing), answered at once. Only a vote
        the bot signed for this chat counts: one naming another chat's turn, or a turn never answered, is
        refused and counted nowhere (no claim, metric, counter or audit record)."""
        chat_id = query.message.chat.id
        if not buttons.vote_is_genuine(bot.token, chat_id, callback_data):
            log.info("chat %s: a vote not signed for this chat was refused", chat_id)
            await query.answer(texts.FEEDBACK_REFUSED)
            return
        first = await guards.claim_once(f"feedback:{chat_id}:{callback_data.update_id}", FEEDBACK_DAYS * 24 * 3600)
        up = callback_data.value == "up"
        await query.answer(texts.FEEDBACK_ALREADY if not first else texts.FEEDBACK_THANKS if up else texts.FEEDBACK_SORRY)
        if first:
            metrics.FEEDBACK.labels(value="up" if up else "down").inc()
            await guards.count(f"feedback:{'up' if up else 'down'}")
            if audit is not None:
                audit.event("feedback", str(chat_id), update_id=callback_data.update_id,
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
    are the handlers' dependencies (`conversation`, `desk`, `guards`, `sequencer`, `audit`)."""
    operators = operators or Operators()
    dispatcher = Dispatcher(operators=operators, disable_fsm=True, **workflow_data)   # no FSM states: no FSM step per update
    dispatcher.update.outer_middleware(UpdateGate())
    dispatcher.include_router(build_operator_router(operators))
    dispatcher.include_router(build_router())
    return dispatcher
