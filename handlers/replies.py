"""Sending answers to Telegram: HTML-escaped, split at Telegram's 4096-character limit on paragraph or
line boundaries, with bounded retries for flood control and a plain-text retry for entity errors."""

from __future__ import annotations

import asyncio
import html
import logging

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram import Bot
from aiogram.exceptions import TelegramBadRequest, TelegramRetryAfter, TelegramServerError
from aiogram.types import InlineKeyboardMarkup, Message

log = logging.getLogger(__name__)

TELEGRAM_LIMIT = 4096
MAX_RETRY_AFTER_ATTEMPTS = 3
MAX_RETRY_AFTER_SECONDS = 30
MAX_SERVER_ERROR_RETRIES = 3
SERVER_ERROR_BACKOFF = 0.5   # seconds, doubled at each retry


def split_text(text: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """Pieces of at most `limit` characters, cut at a paragraph, then a line, then a sentence end."""
    text = text.strip()
    pieces: list[str] = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind("\n\n"), -1)
        if cut <= 0:
            cut = window.rfind("\n")
        if cut <= 0:
            cut = max(window.rfind(p) for p in "。！？；!?;") + 1
        if cut <= 0:
            cut = limit
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        pieces.append(text)
    return pieces


async def _send(bot: Bot, chat_id: int, text: str, thread_id: int | None = None,
                reply_markup: InlineKeyboardMarkup | None = None) -> Message:
    """One piece: HTML first; entity trouble → once as plain text; flood control → wait, bounded;
    a 5xx from the Bot API (nothing was delivered) → retried with backoff, bounded."""
    plain, server_errors = False, 0
    for attempt in range(MAX_RETRY_AFTER_ATTEMPTS + MAX_SERVER_ERROR_RETRIES + 1):
        try:
            if plain:
                return await bot.send_message(chat_id, text, parse_mode=None, message_thread_id=thread_id,
                                              reply_markup=reply_markup)
            return await bot.send_message(chat_id, html.escape(text, quote=False), parse_mode="HTML",
                                          message_thread_id=thread_id, reply_markup=reply_markup)
        except TelegramServerError:
            server_errors += 1
            if server_errors > MAX_SERVER_ERROR_RETRIES:
                raise
            wait = SERVER_ERROR_BACKOFF * 2 ** (server_errors - 1)
            log.warning("the Bot API answered a server error: resending in %.1f s", wait)
            await asyncio.sleep(wait)
        except TelegramRetryAfter as exc:
            if attempt - server_errors >= MAX_RETRY_AFTER_ATTEMPTS:
                raise
            wait = min(float(exc.retry_after), MAX_RETRY_AFTER_SECONDS)
            log.warning("Telegram flood control: waiting %.1f s before resending", wait)
            await asyncio.sleep(wait)
        except TelegramBadRequest as exc:
            if plain or "entit" not in str(exc).lower() and "parse" not in str(exc).lower():
                raise
            log.warning("Telegram refused the HTML entities; resending as plain text")
            plain = True


async def send_answer(bot: Bot, chat_id: int, text: str, *, thread_id: int | None = None,
                      reply_markup: InlineKeyboardMarkup | None = None) -> Message | None:
    """Send `text` in as many pieces as it needs; buttons go under the last piece, which is returned."""
    pieces = split_text(text)
    last = None
    for n, piece in enumerate(pieces, 1):
        last = await _send(bot, chat_id, piece, thread_id, reply_markup if n == len(pieces) else None)
    return last
