"""The evidence ledger: what the database verified during one turn, and nothing else.

Only results whose status is `verified` are recorded. Each evidence id (`product:001`,
`promotion:P001`, `calc:001:2:regular`, `doc:D001`, `order:A1001`) keeps the product ids it speaks
for and the normalized figures it contains, by kind. Retrieval candidates never enter it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from guardrails.figures import DISCOUNT, MONEY, QUANTITY, STOCK, find_mentions

MONEY_KEYS = {"price", "unit_price", "final_unit_price", "subtotal", "final_total", "discount_amount",
              "minimum_spend", "total"}
QUANTITY_KEYS = {"quantity", "paid_quantity", "free_quantity", "total_units", "minimum_quantity",
                 "requested_units"}
STOCK_KEYS = {"stock_quantity", "available_stock"}
TEXT_KEYS = {"description", "specifications", "usage", "promotion_text", "reason", "message", "title",
             "content", "status_text"}


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


@dataclass
class Evidence:
    """One verified fact source and the figures it can vouch for."""

    evidence_id: str
    kind: str
    record: Mapping[str, Any]
    product_ids: set[str] = field(default_factory=set)
    product_names: set[str] = field(default_factory=set)
    figures: dict[str, set[Decimal]] = field(
        default_factory=lambda: {MONEY: set(), DISCOUNT: set(), STOCK: set(), QUANTITY: set()})

    def add(self, kind: str, value: Any) -> None:
        number = _decimal(value)
        if number is not None:
            self.figures[kind].add(number)

    def vouches_for(self, kind: str, value: Decimal) -> bool:
        if value in self.figures[kind]:
            return True
        # A stock figure is also a quantity the customer can buy ("还能买20双").
        return kind == QUANTITY and value in self.figures[STOCK]


def _harvest(evidence: Evidence, node: Any, discount_type: str | None = None) -> None:
    """Walk a verified record and file every figure under its kind."""
    if isinstance(node, Mapping):
        own_type = node.get("discount_type", discount_type)
        for key, value in node.items():
            if key in MONEY_KEYS:
                evidence.add(MONEY, value)
            elif key in QUANTITY_KEYS:
                evidence.add(QUANTITY, value)
            elif key in STOCK_KEYS:
                evidence.add(STOCK, value)
            elif key == "discount_value":
                kind = {"percentage": DISCOUNT, "fixed_reduction": MONEY, "buy_x_get_y": QUANTITY}.get(own_type)
                if kind:
                    evidence.add(kind, value)
            elif key in TEXT_KEYS and isinstance(value, str):
                for mention in find_mentions(value):
                    if mention.value is not None:
                        evidence.figures[mention.kind].add(mention.value)
            elif isinstance(value, (Mapping, list)):
                _harvest(evidence, value, own_type)
    elif isinstance(node, list):
        for item in node:
            _harvest(evidence, item, discount_type)


class EvidenceLedger:
    """Everything verified in one turn, by evidence id."""

    def __init__(self) -> None:
        self.entries: dict[str, Evidence] = {}
        self.has_product_data = False

    def __contains__(self, evidence_id: object) -> bool:
        return evidence_id in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def verified_product_ids(self) -> set[str]:
        return {pid for e in self.entries.values() if e.kind == "product" for pid in e.product_ids}

    @property
    def product_names(self) -> dict[str, str]:
        """Verified product name → product id (only from product details)."""
        return {name: pid for e in self.entries.values() if e.kind == "product"
                for name in e.product_names for pid in e.product_ids}

    def record(self, result: Mapping[str, Any]) -> list[str]:
        """File a tool result; returns the evidence ids added (none unless status is verified)."""
        if not isinstance(result, Mapping) or result.get("status") != "verified":
            return []
        added = []
        for product in result.get("products") or []:
            ev = self._new(product, "product")
            ev.product_ids.add(str(product["product_id"]))
            ev.product_names.add(str(product.get("product_name") or ""))
            self.has_product_data = True
            added.append(ev.evidence_id)
        for promo in result.get("promotions") or []:
            ev = self._new(promo, "promotion")
            ev.product_ids.add(str(promo["product_id"]))
            added.append(ev.evidence_id)
        for doc in result.get("documents") or []:
            added.append(self._new(doc, "doc").evidence_id)
        for order in result.get("orders") or []:
            ev = self._new(order, "order")
            ev.product_ids.update(str(i["product_id"]) for i in order.get("items") or [])
            added.append(ev.evidence_id)
        if str(result.get("evidence_id", "")).startswith("calc:"):
            ev = self._new(result, "calc")
            ev.product_ids.add(str(result["product_id"]))
            added.append(ev.evidence_id)
        return added

    def _new(self, record: Mapping[str, Any], kind: str) -> Evidence:
        evidence = Evidence(str(record["evidence_id"]), kind, record)
        _harvest(evidence, record)
        self.entries[evidence.evidence_id] = evidence
        return evidence

    def cited(self, citation_ids: Iterable[str]) -> list[Evidence]:
        return [self.entries[c] for c in citation_ids if c in self.entries]
