"""aiogram routers and the update gate. Dependencies arrive through the dispatcher's workflow data
(`agent`, `memory`, `guards`, `sequencer`, `audit`, `limits`), never through module globals."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiogram import BaseMiddleware, Bot, Dispatcher, F, Router
from aiogram.filters import Command, CommandStart
from aiogram.types import Message, TelegramObject, Update
from aiogram.utils.chat_action import ChatActionSender

from agent.memory import MemoryStore, Turn
from agent.turn import Agent
from handlers import texts
from handlers.guards import ChatSequencer
from handlers.replies import send_answer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    max_message_chars: int = 1000


class UpdateGate(BaseMiddleware):
    """Outer update middleware: per-chat order first (before any other await), then duplicates
    (Telegram re-sends an update when a webhook answer is late), then the cross-process chat lock."""

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        assert isinstance(event, Update)
        chat = data.get("event_chat")
        chat_id = str(chat.id) if chat is not None else f"update:{event.update_id}"
        sequencer: ChatSequencer = data["sequencer"]
        async with sequencer.turn(chat_id):
            if not await data["guards"].first_time(event.update_id):
                log.info("duplicate update %s ignored", event.update_id)
                return None
            async with data["guards"].chat_lock(chat_id):
                return await handler(event, data)


def build_router() -> Router:
    """A fresh router (a router can belong to only one dispatcher)."""
    router = Router(name="kefu")

    @router.message(CommandStart())
    async def on_start(message: Message, bot: Bot) -> None:
        await send_answer(bot, message.chat.id, texts.START)

    @router.message(Command("help"))
    async def on_help(message: Message, bot: Bot) -> None:
        await send_answer(bot, message.chat.id, texts.HELP)

    @router.message(Command("reset"))
    async def on_reset(message: Message, bot: Bot, memory: MemoryStore) -> None:
        await memory.reset(str(message.chat.id))
        await send_answer(bot, message.chat.id, texts.RESET)

    @router.message(F.text)
    async def on_text(message: Message, bot: Bot, agent: Agent, memory: MemoryStore, guards: Any, audit: Any,
                      limits: Limits, event_update: Update) -> None:
        text = (message.text or "").strip()
        chat_id = message.chat.id
        user_id = str(message.from_user.id) if message.from_user else str(chat_id)
        if len(text) > limits.max_message_chars:
            await send_answer(bot, chat_id, texts.TOO_LONG.format(limit=limits.max_message_chars))
            return
        verdict = await guards.rate(user_id)
        if verdict != "ok":
            if verdict == "notify":
                await send_answer(bot, chat_id, texts.SLOW_DOWN)
            return
        try:
            async with ChatActionSender.typing(bot=bot, chat_id=chat_id):
                result = await agent.answer(text, user_id=user_id, memory=await memory.load(str(chat_id)))
        except Exception:
            log.exception("turn failed for chat %s", chat_id)
            await send_answer(bot, chat_id, texts.SORRY)
            return
        await send_answer(bot, chat_id, result.answer)
        await memory.append(str(chat_id), Turn(text, result.answer), result.focus_product_ids, result.quantity)
        if audit is not None:
            audit.record(chat_id=str(chat_id), user_id=user_id, message=text, result=result,
                         update_id=event_update.update_id)

    @router.message()
    async def on_other(message: Message, bot: Bot) -> None:
        await send_answer(bot, message.chat.id, texts.ONLY_TEXT)

    return router


def build_dispatcher(**workflow_data: Any) -> Dispatcher:
    """The dispatcher with the gate and the router; `workflow_data` are the handlers' dependencies."""
    dispatcher = Dispatcher(**workflow_data)
    dispatcher.update.outer_middleware(UpdateGate())
    dispatcher.include_router(build_router())
    return dispatcher
