"""One customer conversation as a service: a channel asks for an answer, delivers it its own way,
then has the turn remembered and audited. The Telegram handler and the console chat both use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.memory import ChatMemory, MemoryStore, Turn
from agent.turn import Agent, TurnResult
from db.catalog import ProductFilter, find_products
from db.facts import Order
from db.orders import list_orders


@dataclass(frozen=True)
class CustomerCard:
    """What an operator needs on taking a conversation over: recent turns, the focus, recent orders."""
    turns: tuple[Turn, ...]
    focus: tuple[str, ...]          # product names
    orders: tuple[Order, ...]


class Conversation:
    def __init__(self, agent: Agent, memory: MemoryStore, audit: Any = None):
        self.agent, self.memory, self.audit = agent, memory, audit

    async def answer(self, chat_id: str, user_id: str, text: str, memory: ChatMemory | None = None) -> TurnResult:
        """The agent's released answer to `text`, with this chat's memory (read here unless the caller
        read it already); nothing is saved yet."""
        if memory is None:
            memory = await self.memory.load(chat_id)
        return await self.agent.answer(text, user_id=user_id, memory=memory)

    async def remember(self, chat_id: str, user_id: str, text: str, result: TurnResult, *,
                       update_id: int | None = None, delivered: bool = True, also: Any = None) -> None:
        """After delivery: the turn joins the memory and the audit. An undelivered turn (the chat was
        handed to a person meanwhile) is audited only, so the model never sees it later."""
        if delivered:
            await self.memory.append(chat_id, Turn(text, result.answer), result.focus_product_ids, result.quantity,
                                     also=also)
        if self.audit is not None:
            self.audit.record(chat_id=chat_id, user_id=user_id, message=text, result=result, update_id=update_id,
                              delivered=delivered)

    async def reset(self, chat_id: str) -> None:
        await self.memory.reset(chat_id)

    async def card(self, chat_id: str, user_id: str) -> CustomerCard:
        memory = await self.memory.load(chat_id)
        products = await find_products(self.agent.conn, ProductFilter(), ids=list(memory.focus_product_ids))
        orders = await list_orders(self.agent.conn, user_id)
        return CustomerCard(tuple(memory.turns), tuple(p.product_name for p in products), orders.orders)
