"""Inline buttons and their callback data (aiogram's CallbackData: typed, prefixed, size-checked)."""

from __future__ import annotations

from typing import Annotated, Literal

from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup
from pydantic import Field

from handlers import texts

# A callback's numbers come from the client: bounded to what Telegram issues and SQLite holds, so a forged
# `fb:up:<2^63 or more>` matches no button (answered as stale) instead of reaching the audit store.
MAX_UPDATE_ID = 2 ** 63 - 1
UpdateId = Annotated[int, Field(ge=0, le=MAX_UPDATE_ID)]
ChatId = Annotated[int, Field(ge=-(2 ** 63), le=2 ** 63 - 1)]


class Vote(CallbackData, prefix="fb"):
    """👍 / 👎 on one answer, named by the update id of the customer's message it answered."""
    value: Literal["up", "down"]
    update_id: UpdateId


class Handoff(CallbackData, prefix="ho"):
    """ask: a customer wants a person; claim / close: an operator acts on a customer's chat."""
    action: str
    chat_id: ChatId = 0


def feedback(update_id: int, offer_person: bool = False) -> InlineKeyboardMarkup | None:
    """👍 / 👎 under an answer; none when the update id is out of the bound (the answer is sent anyway)."""
    rows = []
    if 0 <= update_id <= MAX_UPDATE_ID:
        rows.append([InlineKeyboardButton(text="👍", callback_data=Vote(value="up", update_id=update_id).pack()),
                     InlineKeyboardButton(text="👎", callback_data=Vote(value="down", update_id=update_id).pack())])
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
