"""The tools the model sees: strict JSON schemas, arguments validated before anything runs, results
filed in the turn's evidence ledger. Facts only come from `db/`; search results are candidates."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Literal

import aiosqlite
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from db.catalog import get_product_details, get_promotions
from db.knowledge import search_knowledge
from db.orders import list_orders
from db.pricing import MAX_QUANTITY, calculate_final_price
from guardrails.ledger import EvidenceLedger
from retrieval.search import ProductSearch

SUBMIT = "submit_answer"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchProducts(_Args):
    """Find candidate products for the customer's words. Candidates are NOT facts: verify them by id."""

    query: str = Field(min_length=1, max_length=200, description="the customer's need or product words, in Chinese")
    top_k: int = Field(5, ge=1, le=10)


class GetProductDetails(_Args):
    """Verified product facts (name, brand, price, stock, description) by product id."""

    product_ids: list[str] = Field(min_length=1, max_length=10)


class GetPromotions(_Args):
    """Verified promotions of products, by product id."""

    product_ids: list[str] = Field(min_length=1, max_length=10)


class CalculateFinalPrice(_Args):
    """The final price of buying `quantity` units, computed from the database's own price and promotions."""

    product_id: str = Field(min_length=1, max_length=64)
    quantity: int = Field(ge=1, le=MAX_QUANTITY)
    is_first_purchase: bool = False


class SearchKnowledge(_Args):
    """Store policies: returns, shipping, invoices, warranty, payment, service hours, sizing."""

    query: str = Field(min_length=1, max_length=200)


class ListMyOrders(_Args):
    """The asking customer's own recent orders (or one order by id)."""

    order_id: str | None = Field(None, max_length=64)


class SubmitAnswer(_Args):
    """Submit the final answer for the customer (Simplified Chinese), with the evidence ids it rests on."""

    answer: str = Field(min_length=1, max_length=3000)
    citation_ids: list[str] = Field(max_length=30)
    status: Literal["grounded", "insufficient_evidence"]


TOOLS: dict[str, type[_Args]] = {
    "search_products": SearchProducts,
    "get_product_details": GetProductDetails,
    "get_promotions": GetPromotions,
    "calculate_final_price": CalculateFinalPrice,
    "search_knowledge": SearchKnowledge,
    "list_my_orders": ListMyOrders,
    SUBMIT: SubmitAnswer,
}


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI function-tool schemas (`additionalProperties: false`, bounded integers and lists)."""
    out = []
    for name, model in TOOLS.items():
        params = _strip_titles(model.model_json_schema())
        params.pop("description", None)
        out.append({"type": "function", "function": {"name": name, "description": (model.__doc__ or "").strip(),
                                                     "parameters": params}})
    return out


class ToolError(Exception):
    """A tool call that cannot run: unknown tool, malformed JSON or invalid arguments."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code

    def as_result(self) -> dict[str, Any]:
        return {"status": "error", "error": self.code, "message": str(self)}


def parse_arguments(name: str, raw: str) -> _Args:
    """Validate a tool call before anything runs; raise ToolError with a message for the model."""
    model = TOOLS.get(name)
    if model is None:
        raise ToolError("UNKNOWN_TOOL", f"there is no tool named {name!r}; available: {', '.join(TOOLS)}")
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ToolError("MALFORMED_JSON", f"arguments are not valid JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(data, dict):
        raise ToolError("INVALID_ARGUMENTS", "arguments must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors())
        raise ToolError("INVALID_ARGUMENTS", problems) from None


def to_json(result: Any) -> str:
    """Tool results as JSON for the model: Decimals as exact strings, never floats."""
    def default(value: Any) -> Any:
        if isinstance(value, Decimal):
            return format(value, "f")
        raise TypeError(type(value).__name__)

    return json.dumps(result, ensure_ascii=False, default=default)


class ToolRunner:
    """Runs validated tool calls for one turn and files every verified result in the ledger.

    `prepare` lets the backend add what a price question needs (details, promotions, the calculation
    for the quantity the customer asked about) to the same tool result, saving model calls."""

    def __init__(self, conn: aiosqlite.Connection, search: ProductSearch, ledger: EvidenceLedger, user_id: str,
                 quantity: int | None = None, first_purchase: bool = False, prepare: bool = True):
        self.conn, self.search, self.ledger, self.user_id = conn, search, ledger, user_id
        self.quantity, self.first_purchase, self.prepare = quantity, first_purchase, prepare

    async def run(self, name: str, args: _Args) -> dict[str, Any]:
        if isinstance(args, SearchProducts):
            result = await self.search.search_products(args.query, args.top_k)
            ids = [c["product_id"] for c in result["candidates"]][:3]
            if self.prepare and ids:
                result["prepared_evidence"] = await self._prepare(ids, calculate_for=ids[0])
            return result
        if isinstance(args, GetProductDetails):
            result = await get_product_details(self.conn, args.product_ids)
            self.ledger.record(result)
            found = [p["product_id"] for p in result["products"]]
            if self.prepare and found:
                extra = await self._prepare(found, calculate_for=found[0], details=False)
                result["prepared_evidence"] = extra
            return result
        if isinstance(args, GetPromotions):
            result = await get_promotions(self.conn, args.product_ids)
        elif isinstance(args, CalculateFinalPrice):
            result = await calculate_final_price(self.conn, args.product_id, args.quantity, args.is_first_purchase)
        elif isinstance(args, SearchKnowledge):
            result = await search_knowledge(self.conn, args.query)
        elif isinstance(args, ListMyOrders):
            result = await list_orders(self.conn, self.user_id, args.order_id)
        else:
            raise ToolError("UNKNOWN_TOOL", f"{name} is not run by the tool runner")
        self.ledger.record(result)
        return result

    async def _prepare(self, ids: list[str], calculate_for: str, details: bool = True) -> dict[str, Any]:
        """Verified details, promotions and the price calculation for the likely product."""
        out: dict[str, Any] = {}
        if details:
            out["product_details"] = await get_product_details(self.conn, ids)
            self.ledger.record(out["product_details"])
        out["promotions"] = await get_promotions(self.conn, ids)
        self.ledger.record(out["promotions"])
        calc = await calculate_final_price(self.conn, calculate_for, self.quantity or 1, self.first_purchase)
        self.ledger.record(calc)
        out["calculation"] = calc
        return out
