"""The offline model: deterministic, no network. It calls the same tools through the same loop, reads
their typed results from the turn context (never by re-parsing JSON), and writes its answers from
verified records only — so they pass the same validator. Used when no API key is configured, and as
the degraded mode."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agent import answers
from agent.context import TurnContext
from agent.intent import GENERIC, Ask, Intent, covers
from agent.models import Message, ModelReply, ToolCall
from agent.tools import SUBMIT
from guardrails.fallback import SAFE_FALLBACK
from guardrails.figures import DISCOUNT, MONEY, find_mentions
from guardrails.validator import AnswerStatus

_ORDER_ID = re.compile(r"(?<![A-Za-z0-9])([A-Z]\d{3,})(?!\d)")


class OfflineModel:
    name = "offline"
    reads_json = False   # it reads the typed results in the turn context, so none are serialized for it

    def __init__(self) -> None:
        self._counter = 0

    def _call(self, name: str, arguments: dict[str, Any]) -> ModelReply:
        self._counter += 1
        return ModelReply(None, [ToolCall(f"offline_{self._counter}", name, json.dumps(arguments, ensure_ascii=False))])

    def _submit(self, answer: str, citations: list[str], status: str = AnswerStatus.GROUNDED) -> ModelReply:
        return self._call(SUBMIT, {"answer": answer, "citation_ids": citations, "status": status})

    def _calls(self, calls: list[tuple[str, dict[str, Any]]]) -> ModelReply:
        replies = [self._call(name, args).tool_calls[0] for name, args in calls]
        return ModelReply(None, replies)

    async def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]],
                       tool_choice: str = "auto", context: TurnContext | None = None) -> ModelReply:
        if context is None:   # called outside the turn loop: only the customer's last message is known
            last = next(m for m in reversed(messages) if m["role"] == "user")
            context = TurnContext(question=last.get("content") or "", user_id="")
        asked = context.intent
        assert asked is not None
        focus, called = context.focus_product_ids, context.called
        if context.rejections:
            return self._submit(SAFE_FALLBACK, [], AnswerStatus.INSUFFICIENT)
        if not context.results:
            return self._first_step(asked, focus)
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
        if findings.basket is not None:
            return self._submit(*answers.basket_answer(findings.basket))
        several = self._several(asked, findings)
        if several:
            if Ask.COMPARE in asked.asks:
                return self._submit(*answers.compare_answer([findings.products[p] for p in several], asked))
            items = [{"product_id": p, "quantity": asked.quantities.get(p) or 1} for p in several]
            return self._call("calculate_final_price", {"items": items, "is_first_purchase": asked.first_purchase})
        if asked.listing and last == "search_products":
            answer, cites = answers.listing_answer(findings, asked)
            return self._submit(answer, cites, AnswerStatus.GROUNDED if cites else AnswerStatus.INSUFFICIENT)
        if findings.products:
            return self._about_one(asked, findings)
        if focus and asked.follow_up and "get_product_details" not in called:
            return self._call("get_product_details", {"product_ids": focus})
        return self._submit(answers.not_sold_answer(asked.subject), [], AnswerStatus.INSUFFICIENT)

    @staticmethod
    def _several(asked: Intent, findings: answers.Findings) -> list[str]:
        """The products of a message about several: those it names, else the best candidate of each search."""
        if not asked.several:
            return []
        ids = [p for p in asked.products if p in findings.products]
        if len(ids) < 2:
            ids = [s[0] for s in findings.searches if s and s[0] in findings.products]
        ids = list(dict.fromkeys(ids))
        return ids if len(ids) >= 2 else []

    def _about_one(self, asked: Intent, findings: answers.Findings) -> ModelReply:
        order = [pid for pid in findings.candidates if pid in findings.products] or list(findings.products)
        main = findings.products[order[0]]
        subject = asked.subject
        if subject and not asked.follow_up and not asked.describes_need and not covers(subject, main.product_name):
            return self._submit(*answers.related_answer(subject, [main]))
        if Ask.SPEC in asked.asks:
            return self._submit(*answers.spec_answer(main))
        if Ask.BRAND in asked.asks and not asked.asks & {Ask.PRICE, Ask.PROMOTION}:
            return self._submit(*answers.brand_answer(main))
        question = asked.text
        wants_price = bool(asked.asks & {Ask.PRICE, Ask.PROMOTION} or asked.quantity or asked.first_purchase)
        wants_more = (not wants_price and Ask.STOCK not in asked.asks and len(findings.products) > 1
                      and asked.describes_need)
        claimed = any(m.value is not None and m.kind in (MONEY, DISCOUNT) for m in find_mentions(question))
        return self._submit(*answers.product_answer(findings, wants_price=wants_price, wants_alternatives=wants_more,
                                                    claimed_other_figure=claimed))

    def _first_step(self, asked: Intent, focus: list[str]) -> ModelReply:
        if Ask.MODIFY in asked.asks:
            return self._submit(answers.REFUSE_CHANGE, [])
        if asked.asks & {Ask.GREETING, Ask.THANKS}:
            return self._submit(answers.THANKS if Ask.THANKS in asked.asks else answers.GREETING, [])
        if Ask.ORDER in asked.asks:
            order_id = _ORDER_ID.search(asked.text.upper())
            return self._call("list_my_orders", {"order_id": order_id.group(1)} if order_id else {})
        if Ask.POLICY in asked.asks and not asked.products:
            return self._call("search_knowledge", {"query": asked.text[:200]})
        if focus and asked.follow_up:
            return self._call("get_product_details", {"product_ids": focus})
        if asked.listing:
            filters = {"max_price": None if asked.max_price is None else str(asked.max_price),
                       "min_price": None if asked.min_price is None else str(asked.min_price),
                       "brand": asked.brand, "category": asked.category}
            query = "" if asked.category or (asked.brand and not asked.products) or asked.subject in GENERIC \
                else asked.subject
            return self._call("search_products", {"query": (query or "")[:200], "top_k": 10, "sort": asked.sort,
                                                  "in_stock": asked.in_stock,
                                                  **{k: v for k, v in filters.items() if v is not None}})
        if len(asked.products) >= 2:
            return self._call("get_product_details", {"product_ids": list(asked.products)})
        if asked.several:
            return self._calls([("search_products", {"query": part[:200], "top_k": 3}) for part in asked.parts[:5]])
        if asked.exact:   # the customer named a product exactly: verify it, no retrieval guess needed
            return self._call("get_product_details", {"product_ids": [asked.exact]})
        return self._call("search_products", {"query": asked.text[:200], "top_k": 3})
