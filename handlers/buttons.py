"""Inline buttons and their callback data (aiogram's CallbackData: typed, prefixed, size-checked)."""

from __future__ import annotations

from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from handlers import texts


class Vote(CallbackData, prefix="fb"):
    """👍 / 👎 on one answer, named by the update id of the customer's message it answered."""
    value: str          # up | down
    update_id: int


class Handoff(CallbackData, prefix="ho"):
    """ask: a customer wants a person; claim / close: an operator acts on a customer's chat."""
    action: str
    chat_id: int = 0


def feedback(update_id: int, offer_person: bool = False) -> InlineKeyboardMarkup:
    rows = [[InlineKeyboardButton(text="👍", callback_data=Vote(value="up", update_id=update_id).pack()),
             InlineKeyboardButton(text="👎", callback_data=Vote(value="down", update_id=update_id).pack())]]
    if offer_person:
        rows.append([ask_person_button()])
    return InlineKeyboardMarkup(inline_keyboard=rows)


def ask_person_button() -> InlineKeyboardButton:
    return InlineKeyboardButton(text=texts.HANDOFF_BUTTON, callback_data=Handoff(action="ask").pack())


def ask_person() -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(inline_keyboard=[[ask_person_button()]])


def operator_card(chat_id: int) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(inline_keyboard=[[
        InlineKeyboardButton(text=texts.CLAIM_BUTTON, callback_data=Handoff(action="claim", chat_id=chat_id).pack()),
        InlineKeyboardButton(text=texts.CLOSE_BUTTON, callback_data=Handoff(action="close", chat_id=chat_id).pack()),
    ]])
