"""The offline model: deterministic, no network. It calls the same tools through the same loop, reads
their typed results from the turn context (never by re-parsing JSON), and writes its answers from
verified records only — so they pass the same validator. Used when no API key is configured, and as
the degraded mode."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agent import answers, intent
from agent.context import TurnContext
from agent.models import Message, ModelReply, ToolCall
from agent.tools import SUBMIT
from guardrails.fallback import SAFE_FALLBACK
from guardrails.figures import DISCOUNT, MONEY, find_mentions
from guardrails.validator import AnswerStatus

_ORDER_ID = re.compile(r"(?<![A-Za-z0-9])([A-Z]\d{3,})(?!\d)")


class OfflineModel:
    name = "offline"

    def __init__(self) -> None:
        self._counter = 0

    def _call(self, name: str, arguments: dict[str, Any]) -> ModelReply:
        self._counter += 1
        return ModelReply(None, [ToolCall(f"offline_{self._counter}", name, json.dumps(arguments, ensure_ascii=False))])

    def _submit(self, answer: str, citations: list[str], status: str = AnswerStatus.GROUNDED) -> ModelReply:
        return self._call(SUBMIT, {"answer": answer, "citation_ids": citations, "status": status})

    async def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]],
                       tool_choice: str = "auto", context: TurnContext | None = None) -> ModelReply:
        if context is None:   # called outside the turn loop: only the customer's last message is known
            last = next(m for m in reversed(messages) if m["role"] == "user")
            context = TurnContext(question=last.get("content") or "", user_id="")
        question, focus, called = context.question, context.focus_product_ids, context.called
        if context.rejections:
            return self._submit(SAFE_FALLBACK, [], AnswerStatus.INSUFFICIENT)
        if not context.results:
            return self._first_step(question, focus)
        findings = answers.Findings.gather(result for _, result in context.results)
        last = called[-1]
        if last == "list_my_orders":
            if findings.orders:
                return self._submit(*answers.orders_answer(findings))
            return self._submit(answers.NO_ORDERS, [], AnswerStatus.INSUFFICIENT)
        if last == "search_knowledge":
            if findings.documents:
                return self._submit(*answers.policy_answer(findings))
            return self._submit(answers.NO_POLICY, [], AnswerStatus.INSUFFICIENT)
        if findings.products:
            wants_price = bool(intent.PRICE.search(question) or intent.requested_quantity(question)
                               or intent.PROMOTION.search(question) or intent.is_first_purchase(question))
            wants_more = (not wants_price and not intent.STOCK.search(question) and len(findings.products) > 1
                          and intent.is_description(question))
            claimed = any(m.value is not None and m.kind in (MONEY, DISCOUNT) for m in find_mentions(question))
            return self._submit(*answers.product_answer(findings, wants_price=wants_price, wants_alternatives=wants_more,
                                                        claimed_other_figure=claimed))
        if focus and intent.is_follow_up(question) and "get_product_details" not in called:
            return self._call("get_product_details", {"product_ids": focus})
        return self._submit(answers.not_sold_answer(question), [], AnswerStatus.INSUFFICIENT)

    def _first_step(self, question: str, focus: list[str]) -> ModelReply:
        if intent.MODIFY.search(question):
            return self._submit(answers.REFUSE_CHANGE, [])
        if intent.GREETING.match(question):
            return self._submit(answers.THANKS if intent.THANKS.search(question) else answers.GREETING, [])
        if intent.ORDER.search(question):
            order_id = _ORDER_ID.search(question.upper())
            return self._call("list_my_orders", {"order_id": order_id.group(1)} if order_id else {})
        if intent.POLICY.search(question):
            return self._call("search_knowledge", {"query": question[:200]})
        if focus and intent.is_follow_up(question):
            return self._call("get_product_details", {"product_ids": focus})
        return self._call("search_products", {"query": question[:200], "top_k": 3})
