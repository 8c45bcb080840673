"""Inline buttons and their callback data (aiogram's CallbackData: typed, prefixed, size-checked)."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from typing import Annotated, Literal

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup
from pydantic import Field

from handlers import texts

# A callback's numbers come from the client: bounded to what Telegram issues and SQLite holds, so a forged
# `fb:up:<2^63 or more>` matches no button (answered as stale) instead of reaching the audit store.
MAX_UPDATE_ID = 2 ** 63 - 1
UpdateId = Annotated[int, Field(ge=0, le=MAX_UPDATE_ID)]
ChatId = Annotated[int, Field(ge=-(2 ** 63), le=2 ** 63 - 1)]
# 96 bits of an HMAC-SHA256, base64url: `fb:down:<19 digits>:<16>` is 44 bytes, within Telegram's 64
SIGNATURE_CHARS = 16
Signature = Annotated[str, Field(pattern=rf"^[A-Za-z0-9_-]{{{SIGNATURE_CHARS}}}$")]


class Vote(CallbackData, prefix="fb"):
    """👍 / 👎 on one answer, named by the update id of the customer's message it answered and signed for
    the chat it was shown in (`vote_signature`): a client can send any callback data, so a vote naming
    another chat's turn, or a turn the bot never answered, carries no valid signature."""
    value: Literal["up", "down"]
    update_id: UpdateId
    sig: Signature


@functools.lru_cache(maxsize=4)
def _vote_key(secret: str) -> bytes:
    """The feedback signing key, derived from the deployment's secret (the bot token) for this use only."""
    return hmac.new(secret.encode(), b"kefu-bot feedback buttons v1", hashlib.sha256).digest()


def vote_signature(secret: str, chat_id: int, update_id: int) -> str:
    """What binds a vote to the chat and the turn it was shown under."""
    mac = hmac.new(_vote_key(secret), f"{chat_id}:{update_id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode()[:SIGNATURE_CHARS]


def vote_is_genuine(secret: str, chat_id: int, vote: Vote) -> bool:
    """True when the bot itself put this vote's buttons under an answer in `chat_id`."""
    return hmac.compare_digest(vote_signature(secret, chat_id, vote.update_id), vote.sig)


class Handoff(CallbackData, prefix="ho"):
    """ask: a customer wants a person; claim / close: an operator acts on a customer's chat."""
    action: str
    chat_id: ChatId = 0


def feedback(secret: str, chat_id: int, update_id: int, offer_person: bool = False) -> InlineKeyboardMarkup | None:
    """👍 / 👎 under an answer to `update_id` in `chat_id`, signed with `secret`; none when the update id is
    out of the bound (the answer is sent anyway)."""
    rows = []
    if 0 <= update_id <= MAX_UPDATE_ID:
        sig = vote_signature(secret, chat_id, update_id)
        rows.append([InlineKeyboardButton(text=text, callback_data=Vote(value=value, update_id=update_id, sig=sig).pack())
                     for text, value in (("👍", "up"), ("👎", "down"))])
    if offer_person:
        rows.append([ask_person_button()])
    return InlineKeyboardMarkup(inline_keyboard=rows) if rows else None


def ask_person_button() -> InlineKeyboardButton:
    return InlineKeyboardButton(text=texts.HANDOFF_BUTTON, callback_data=Handoff(action="ask").pack())


def ask_person() -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(inline_keyboard=[[ask_person_button()]])


def operator_card(chat_id: int) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(inline_keyboard=[[
        InlineKeyboardButton(text=texts.CLAIM_BUTTON, callback_data=Handoff(action="claim", chat_id=chat_id).pack()),
        InlineKeyboardButton(text=texts.CLOSE_BUTTON, callback_data=Handoff(action="close", chat_id=chat_id).pack()),
    ]])
