"""The validator as it was before grounding v2 (kind-only checks), kept for side-by-side measurement.

It asks one question of every figure: is a number of this kind (money, discount, stock, quantity) in
the cited evidence of the product the clause names? Figures are harvested from the JSON the model sees,
by key name, as the old ledger did. Never used by the bot; bench/validator.py compares against it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from guardrails.figures import DISCOUNT, MONEY, QUANTITY, STOCK, find_mentions, normalize

_MONEY_KEYS = {"price", "unit_price", "subtotal", "final_total", "discount_amount", "minimum_spend", "total"}
_QUANTITY_KEYS = {"quantity", "paid_quantity", "free_quantity", "total_units", "minimum_quantity"}
_TEXT_KEYS = {"description", "specifications", "usage", "promotion_text", "reason", "title", "content"}
_VALUE_KIND = {"percentage": DISCOUNT, "fixed_reduction": MONEY, "buy_x_get_y": QUANTITY}
_CLAUSE = re.compile(r"[^。！？!?；;\n，,]+[。！？!?；;\n，,]*")


def _add(figures: set[tuple[str, Decimal]], kind: str, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        try:
            figures.add((kind, Decimal(str(value))))
        except InvalidOperation:
            pass


def _harvest(node: Any, figures: set[tuple[str, Decimal]], discount_type: str | None = None) -> None:
    if isinstance(node, Mapping):
        own = node.get("discount_type", discount_type)
        for key, value in node.items():
            if key in _MONEY_KEYS:
                _add(figures, MONEY, value)
            elif key in _QUANTITY_KEYS:
                _add(figures, QUANTITY, value)
            elif key == "stock_quantity":
                _add(figures, STOCK, value)
            elif key == "discount_value" and own in _VALUE_KIND:
                _add(figures, _VALUE_KIND[own], value)
            elif key in _TEXT_KEYS and isinstance(value, str):
                figures |= {(m.kind, m.value) for m in find_mentions(value) if m.value is not None}
            elif isinstance(value, (Mapping, list)):
                _harvest(value, figures, own)
    elif isinstance(node, list):
        for item in node:
            _harvest(item, figures, discount_type)


def ledger_from(records: list[Mapping[str, Any]]) -> dict[str, tuple[set[str], str, set[tuple[str, Decimal]]]]:
    """evidence id → (product ids, product name, figures), from verified records as the model sees them."""
    ledger = {}
    for record in records:
        figures: set[tuple[str, Decimal]] = set()
        _harvest(record, figures)
        pids = {str(record["product_id"])} if "product_id" in record else set()
        ledger[str(record["evidence_id"])] = (pids, str(record.get("product_name") or ""), figures)
    return ledger


def previous_validate(answer: str, citations: list[str], ledger) -> bool:
    answer = normalize(answer).strip()
    if any(c not in ledger for c in citations):
        return False
    cited = [ledger[c] for c in citations]
    names = {name: pid for pids, name, _ in cited for pid in pids if name}
    for clause in _CLAUSE.findall(answer) or [answer]:
        named = {pid for name, pid in sorted(names.items(), key=lambda x: -len(x[0])) if name in clause}
        pool = [e for e in cited if not named or e[0] & named or not e[0]]
        for m in find_mentions(clause):
            if m.value is None:
                return False
            if m.kind == QUANTITY and m.value == 1:
                continue
            kinds = {m.kind, STOCK} if m.kind == QUANTITY else {m.kind}
            if not any((k, m.value) in e[2] for e in pool for k in kinds):
                return False
    return True
