"""The tools the model sees: strict JSON schemas, arguments validated before anything runs, results
filed in the turn's evidence ledger. Facts only come from `db/`; search results are candidates."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import InitVar, dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, Literal

import aiosqlite
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from db.catalog import (
    PRICE_SORTS,
    ProductFilter,
    details_from,
    fetch_products,
    fetch_promotions,
    find_products,
    get_promotions,
    list_categories,
    products_of_kind,
    promotions_from,
)
from db.facts import (
    AmountDifference,
    Basket,
    ComparisonRefusal,
    OrderList,
    PolicyDocuments,
    Product,
    ProductDetails,
    PromotionList,
    Quote,
    QuoteRefusal,
    ReceivePlan,
    Status,
    ThresholdPlan,
)
from db.ids import normalize_ids
from db.knowledge import documents_by_id
from db.orders import list_orders
from db.pricing import MAX_QUANTITY, calculate_basket, calculate_final_price, paid_now, quote_from
from db.promotion_plans import amount_difference, amount_of, plan_receive, plan_threshold, plan_threshold_from
from guardrails.ledger import EvidenceLedger
from guardrails.validator import AnswerStatus
from retrieval.passages import PassageSearch
from retrieval.search import Candidate, ProductSearch
from retrieval.text import is_han

SUBMIT = "submit_answer"
# Sent with every search result: retrieval only proposes.
WARNING = ("这些只是检索候选，不是事实：价格、库存、品牌和优惠必须用 get_product_details / get_promotions "
           "按 product_id 核实后才能告诉顾客。")
LIST_TOP_K = 5   # a search for more candidates than this is a request for a list (有哪些跑鞋)
FILTERED_WITHIN = 3.5   # a filtered search keeps candidates this far below the best (2.5 unfiltered), then SQL filters


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchProducts(_Args):
    """Find products for the customer's words, optionally filtered (price range, brand, category, in stock)
    and sorted. Candidates are NOT facts: verify them by id. With filters and no words, lists the catalog's
    matching products (e.g. 李宁的所有商品, 500元以内的户外用品); with only an order, the whole catalog in that order
    (店里最贵的东西: sort price_desc). The result usually carries
    prepared_evidence: verified details and promotions of the candidates and a price calculation."""

    query: str = Field("", max_length=200, description="the customer's need or product words, in Chinese")
    top_k: int = Field(5, ge=1, le=10, description="how many; above 5 asks for a list of the kind named")
    max_price: Decimal | None = Field(None, ge=0, le=100_000_000, description="only products a unit of which costs at most this now (its price, or less under a promotion)")
    min_price: Decimal | None = Field(None, ge=0, le=100_000_000, description="only products at or above this price")
    brand: str | None = Field(None, max_length=40, description="exactly a brand of the catalog, e.g. 李宁")
    category: str | None = Field(None, max_length=20, description="a category, e.g. 户外, 游泳, 健身, 足球")
    in_stock: bool = False
    sort: Literal["relevance", "price_asc", "price_desc", "stock_desc"] = "relevance"

    @model_validator(mode="after")
    def _something_to_search(self) -> SearchProducts:
        if not self.query.strip() and not self.filter() and self.sort == "relevance":
            raise ValueError("give query words, a filter or an order")
        return self

    def filter(self) -> ProductFilter:
        return ProductFilter(self.max_price, self.min_price, self.brand, self.category, self.in_stock)


class GetProductDetails(_Args):
    """Verified product facts (name, brand, price, stock, description) by product id."""

    product_ids: list[str] = Field(min_length=1, max_length=10)


class GetPromotions(_Args):
    """Verified promotions of products, by product id."""

    product_ids: list[str] = Field(min_length=1, max_length=10)


class BasketItem(_Args):
    product_id: str = Field(min_length=1, max_length=64)
    quantity: int = Field(ge=1, le=MAX_QUANTITY)


class CalculateFinalPrice(_Args):
    """The final total of buying `quantity` paid units of one product, or of a basket of several products
    (`items`), computed from the database's own prices and promotions. final_total is the total for exactly
    that quantity (and first-purchase setting), not a unit price: state it with its quantity, e.g.
    买2个共216元; a basket gives each line and the sum (合计). Say 首次购买 when is_first_purchase made it lower."""

    product_id: str | None = Field(None, min_length=1, max_length=64)
    quantity: int | None = Field(None, ge=1, le=MAX_QUANTITY)
    items: list[BasketItem] | None = Field(None, min_length=1, max_length=10)
    is_first_purchase: bool = False

    @model_validator(mode="after")
    def _one_form(self) -> CalculateFinalPrice:
        if (self.items is None) == (self.product_id is None):
            raise ValueError("give either product_id and quantity, or items")
        if self.product_id is not None and self.quantity is None:
            raise ValueError("quantity is required with product_id")
        return self


class CalculateUnitsToReceive(_Args):
    """The cheapest way for the customer to RECEIVE `units_wanted` units of one product, free units included
    (买三送一: to receive 4, pay for 3 and get 1 free). Computed from the database's prices and promotions.
    Returns the paid quantity, the free units, the units received and the total. State it as:
    想要4盒的话，只需付3盒的钱：共105元，另送1盒，实得4盒。"""

    product_id: str = Field(min_length=1, max_length=64)
    units_wanted: int = Field(ge=1, le=MAX_QUANTITY)
    is_first_purchase: bool = False


class CalculateThresholdGap(_Args):
    """How many more units and how much more money until a promotion's threshold holds (满200包邮, 满500减100,
    两支及以上8折), and the total at the least quantity that reaches it. Either `product_id` with the quantity
    the customer has now (`current_quantity`, 0 = nothing chosen yet), or `calculation_id`: the calc: evidence
    id of a price calculation or basket of this turn to measure from. `promotion_id` picks the promotion
    (default: the product's first threshold not yet met). State it as:
    运动水壶满200元包邮：买5个共245元即可包邮（4个共196元，还差4元）。"""

    product_id: str | None = Field(None, min_length=1, max_length=64)
    current_quantity: int = Field(0, ge=0, le=MAX_QUANTITY)
    calculation_id: str | None = Field(None, min_length=1, max_length=300)
    promotion_id: str | None = Field(None, min_length=1, max_length=64)
    is_first_purchase: bool = False

    @model_validator(mode="after")
    def _one_form(self) -> CalculateThresholdGap:
        if (self.product_id is None) == (self.calculation_id is None):
            raise ValueError("give either product_id (and current_quantity), or calculation_id")
        if self.calculation_id is not None and self.current_quantity:
            raise ValueError("current_quantity is read from the calculation; do not give it with calculation_id")
        return self


class CompareAmounts(_Args):
    """The difference between two amounts already verified in this turn, and which is larger: two product
    prices (product:… ids from get_product_details) or two totals (calc:… or order:… ids). State it as:
    篮球鞋售价699元，跑步鞋售价500元，篮球鞋贵199元。 and cite all three ids."""

    first_id: str = Field(min_length=1, max_length=300)
    second_id: str = Field(min_length=1, max_length=300)


class SearchKnowledge(_Args):
    """Store policies: returns, shipping, invoices, warranty, payment, service hours, sizing. With `topic`
    (the policy file the question is about, e.g. returns, shipping, warranty, payment, invoice, sizing,
    service, first-purchase) the best passage of that topic comes first, with the topic's overview."""

    query: str = Field(min_length=1, max_length=200)
    topic: str | None = Field(None, max_length=40, pattern=r"^[a-z][a-z0-9-]*$")


class ListMyOrders(_Args):
    """The asking customer's own recent orders (or one order by id)."""

    order_id: str | None = Field(None, max_length=64)


class ListCategories(_Args):
    """What the shop sells: its product categories (足球, 户外…) and how many products each holds, the fullest
    first. For a customer who has not said what they want (有什么推荐的, 你们都卖啥, 随便看看): offer these
    and ask which sport, whom it is for or what it is needed for; never recommend a product at random."""


class SubmitAnswer(_Args):
    """Submit the final answer for the customer (Simplified Chinese), with the evidence ids it rests on.
    Every figure must keep its role (售价 = unit price, 共/实付 = total for a stated quantity, 满X = threshold)
    and the conditions it holds under (首次购买, N件及以上, 满X元) in the same sentence."""

    answer: str = Field(min_length=1, max_length=3000)
    citation_ids: list[str] = Field(max_length=30)
    status: Literal[AnswerStatus.GROUNDED, AnswerStatus.INSUFFICIENT]


TOOLS: dict[str, type[_Args]] = {
    "search_products": SearchProducts,
    "get_product_details": GetProductDetails,
    "get_promotions": GetPromotions,
    "calculate_final_price": CalculateFinalPrice,
    "search_knowledge": SearchKnowledge,
    "list_my_orders": ListMyOrders,
    "list_categories": ListCategories,
    SUBMIT: SubmitAnswer,
}
# The promotion helpers (agent/promotion_answers.py documents them). Every tool call is parsed against
# CALLABLE_TOOLS, so any model may call them; a remote model is shown them once the turn offers
# tool_schemas(CALLABLE_TOOLS) instead of the core TOOLS.
PROMOTION_TOOLS: dict[str, type[_Args]] = {
    "calculate_units_to_receive": CalculateUnitsToReceive,
    "calculate_threshold_gap": CalculateThresholdGap,
    "compare_amounts": CompareAmounts,
}
CALLABLE_TOOLS: dict[str, type[_Args]] = {**TOOLS, **PROMOTION_TOOLS}


def _strip_titles(node: Any, defs: dict[str, Any] | None = None) -> Any:
    """Drop pydantic's titles and inline its $defs: some OpenAI-compatible endpoints reject $ref."""
    if isinstance(node, dict):
        if defs is None:
            defs = node.get("$defs", {})
        if "$ref" in node:
            return _strip_titles(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return {k: _strip_titles(v, defs) for k, v in node.items() if k not in ("title", "$defs")}
    if isinstance(node, list):
        return [_strip_titles(v, defs) for v in node]
    return node


def tool_schemas(tools: dict[str, type[BaseModel]] | None = None) -> list[dict[str, Any]]:
    """OpenAI function-tool schemas (`additionalProperties: false`, bounded integers and lists)."""
    out = []
    for name, model in (tools or TOOLS).items():
        params = _strip_titles(model.model_json_schema())
        params.pop("description", None)
        out.append({"type": "function", "function": {"name": name, "description": inspect.cleandoc(model.__doc__ or ""),
                                                     "parameters": params}})
    return out


class ToolError(Exception):
    """A tool call that cannot run: unknown tool, malformed JSON or invalid arguments."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code

    def as_result(self) -> dict[str, Any]:
        return {"status": "error", "error": self.code, "message": str(self)}


def parse_arguments(name: str, raw: str, tools: dict[str, type[BaseModel]] | None = None) -> BaseModel:
    """Validate a tool call before anything runs; raise ToolError with a message for the model."""
    tools = tools or CALLABLE_TOOLS
    model = tools.get(name)
    if model is None:
        raise ToolError("UNKNOWN_TOOL", f"there is no tool named {name!r}; available: {', '.join(tools)}")
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


@functools.cache
def _exported(cls: type) -> tuple[str, ...]:
    """A record's JSON keys: its fields, then its public properties (evidence_id, status, totals…)."""
    names = [f.name for f in dataclasses.fields(cls)]
    for klass in cls.__mro__:
        names += [n for n, a in vars(klass).items() if isinstance(a, property) and not n.startswith("_")
                  and n not in names]
    return tuple(names)


def payload(value: Any) -> Any:
    """A typed result as JSON-ready data: dataclass fields and public properties, Decimals as exact strings."""
    if hasattr(value, "as_tool_result"):   # a candidate, an aggregate: their own view for the model
        return value.as_tool_result()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: payload(getattr(value, name)) for name in _exported(type(value))}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict):
        return {k: payload(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [payload(v) for v in value]
    return value


def to_json(result: Any) -> str:
    """Tool results as JSON for the model: Decimals as exact strings, never floats."""
    return json.dumps(payload(result), ensure_ascii=False)


@dataclass(frozen=True)
class Prepared:
    """What the backend adds to a search or details result so a price question needs no more calls."""

    promotions: PromotionList
    calculation: Quote | QuoteRefusal
    product_details: ProductDetails | None = None


@dataclass(frozen=True)
class SearchResult:
    candidates: tuple[Candidate, ...]
    prepared_evidence: Prepared | None = None
    is_verified_fact: bool = False
    warning: str = WARNING
    # products the words found that the filters (budget, brand, category, stock) left out: 0 with none found, so
    # "no_match" says whether the shop has the goods at all or only not within the filters
    outside_filters: int = 0
    lexical_only: InitVar[str] = ""   # why the search ranked by words alone (the embedder failed): in the status

    def __post_init__(self, lexical_only: str) -> None:
        object.__setattr__(self, "_lexical_only", lexical_only)

    @property
    def status(self) -> str:
        found = "candidates" if self.candidates else "no_match"
        return f"{found} (lexical only: {self._lexical_only})" if self._lexical_only else found


@dataclass(frozen=True)
class DetailsResult:
    details: ProductDetails
    prepared_evidence: Prepared | None = None

    @property
    def status(self) -> Status:
        return self.details.status


def file_evidence(ledger: EvidenceLedger, result: object) -> list[str]:
    """File the verified facts of a typed tool result in the ledger; returns the evidence ids added."""
    match result:
        case SearchResult(prepared_evidence=prepared) | DetailsResult(prepared_evidence=prepared) if prepared:
            details = result.details if isinstance(result, DetailsResult) else prepared.product_details
            return (file_evidence(ledger, details) + file_evidence(ledger, prepared.promotions)
                    + file_evidence(ledger, prepared.calculation))
        case DetailsResult(details=details):
            return file_evidence(ledger, details)
        case ProductDetails(products=products):
            return [ledger.add_product(p) for p in products]
        case PromotionList(promotions=promotions):
            return [ledger.add_promotion(p) for p in promotions]
        case Quote():
            return [ledger.add_quote(result)]
        case Basket():
            return ledger.add_basket(result)
        case ReceivePlan():
            return ledger.add_receive_plan(result)
        case ThresholdPlan():
            return ledger.add_threshold_plan(result)
        case AmountDifference():
            return [ledger.add_difference(result)]
        case PolicyDocuments(documents=documents):
            return [ledger.add_document(d) for d in documents]
        case OrderList(orders=orders):
            return [ledger.add_order(o) for o in orders]
    return []   # candidates, refusals, errors: nothing verified


KNOWLEDGE_TOP_K = 3
CLAUSES_SEARCHED = 6   # a policy question's searches: the whole message and its first five clauses
_CLAUSE_APART = re.compile(r"[\s，,。.!！？?；;～~]+")


def _clauses(text: str) -> list[str]:
    """The clauses of a message of several (by its punctuation and spaces), of three characters or more; none for one."""
    pieces = [p for p in _CLAUSE_APART.split(text) if len(p) >= 3]
    return pieces if len(pieces) >= 2 else []


def _by_id(products: list[Product]) -> dict[str, Product]:
    return {p.product_id: p for p in products}


class ToolRunner:
    """Runs validated tool calls for one turn, files every verified result in the ledger and records the
    typed result in the turn context.

    `prepare` lets the backend add what a price question needs (details, promotions, the calculation
    for the quantity the customer asked about) to the same tool result, saving model calls."""

    def __init__(self, conn: aiosqlite.Connection, search: ProductSearch, ledger: EvidenceLedger, user_id: str,
                 quantity: int | None = None, first_purchase: bool = False, prepare: bool = True,
                 passages: PassageSearch | None = None):
        self.conn, self.search, self.ledger, self.user_id = conn, search, ledger, user_id
        self.passages = passages
        self.quantity, self.first_purchase, self.prepare = quantity, first_purchase, prepare
        self._paid_now = functools.partial(paid_now, conn)   # a budget filter keeps what one unit costs now
        self._tools: dict[type[_Args], Callable[[Any], Awaitable[object]]] = {
            SearchProducts: self._search, GetProductDetails: self._details,
            GetPromotions: lambda a: get_promotions(self.conn, a.product_ids),
            CalculateFinalPrice: self._calculate,
            CalculateUnitsToReceive: self._receive, CalculateThresholdGap: self._threshold,
            CompareAmounts: self._compare,
            SearchKnowledge: self._knowledge,
            ListMyOrders: lambda a: list_orders(self.conn, self.user_id, a.order_id),
            ListCategories: lambda a: list_categories(self.conn),
        }

    async def run(self, name: str, args: _Args) -> object:
        tool = self._tools.get(type(args))
        if tool is None:
            raise ToolError("UNKNOWN_TOOL", f"{name} is not run by the tool runner")
        result = await tool(args)
        file_evidence(self.ledger, result)
        return result

    async def _search(self, args: SearchProducts) -> SearchResult:
        """Retrieval proposes; SQL applies the filters. With filters and no words, the catalog itself is
        listed by SQL."""
        where = args.filter()
        candidates: tuple[Candidate, ...] = ()
        rows: dict[str, Product] | None = None   # the product rows SQL read for a filter: not read again below
        outside = 0
        by_price = args.sort in PRICE_SORTS
        wide = bool(where) or by_price or args.top_k > LIST_TOP_K   # a list asked for keeps more of the kind named
        lexical_only = ""
        words = args.query.strip()
        of_kind = await products_of_kind(self.conn, words) \
            if words and all(map(is_han, words)) and (len(words) == 1 or by_price) else []
        if len(words) > 1 and len(of_kind) < 2:   # 最便宜的足球: the names ending in 足球; 跑鞋 ends one name
            of_kind = []                          # only: the search's kind, ordered by price
        if of_kind:   # 鞋, 包, 球: a kind of goods in one character; the catalog's names say which, SQL filters
            listed = await find_products(self.conn, where, of_kind, args.sort, args.top_k, self._paid_now)
            candidates, rows = tuple(Candidate(p.product_id, p.product_name, 0.0) for p in listed), _by_id(listed)
        elif words:
            search = await self.search.find(args.query, 10 if where else args.top_k,
                                            within=FILTERED_WITHIN if wide else None)
            found, lexical_only = search.candidates, search.lexical_only
            if where or by_price:   # SQL keeps those that meet the filter, in retrieval order or the order asked
                by_id = {c.product_id: c for c in found}
                kept = await find_products(self.conn, where, list(by_id), args.sort, paid_now=self._paid_now)
                outside, rows = len(by_id) - len(kept), _by_id(kept)
                found = [by_id[p.product_id] for p in kept]
            candidates = tuple(found[:args.top_k])
        elif where or args.sort != "relevance":   # 店里最贵的东西: the whole catalog in the order asked
            listed = await find_products(self.conn, where, None, args.sort, args.top_k, self._paid_now)
            candidates, rows = tuple(Candidate(p.product_id, p.product_name, 0.0) for p in listed), _by_id(listed)
        ids = [c.product_id for c in candidates][:10 if wide else 3]
        prepared = await self._prepare(ids, with_details=True, found=rows) if self.prepare and ids else None
        return SearchResult(candidates, prepared, outside_filters=outside, lexical_only=lexical_only)

    async def _knowledge(self, args: SearchKnowledge) -> PolicyDocuments:
        """Retrieval proposes policy chunks; their text is read from the catalog by id."""
        if args.topic and self.passages:
            ids = [p.passage_id for p in self.passages.passages]
            in_topic = [i for i in ids if i.startswith(f"{args.topic}#")]
            if in_topic:   # the router named the topic: its best passage for the words, and its overview
                best: list[str] = []
                # …and each clause's (能退不 来回运费要我自己掏吗: the return itself, and who pays the freight)
                for words in [args.query, *_clauses(args.query)][:CLAUSES_SEARCHED]:
                    ranked = [(i, s) for i, s in await self.passages.search(words, len(ids)) if i in in_topic]
                    # (the words and the meaning each putting another first, equally: both)
                    best += [i for i, s in ranked if s >= ranked[0][1] - 1e-9] if ranked else []
                chosen = list(dict.fromkeys(best))
                titles = {p.passage_id: p.title for p in self.passages.passages}
                # a section cut into pieces (a table, then the sentence under it) is read whole
                whole = [i for c in chosen for i in in_topic if titles[i] == titles[c] and i != in_topic[0]]
                return await documents_by_id(self.conn, list(dict.fromkeys([*whole, in_topic[0]])))
        found = await self.passages.search(args.query, KNOWLEDGE_TOP_K) if self.passages else []
        return await documents_by_id(self.conn, [passage_id for passage_id, _ in found])

    async def _calculate(self, args: CalculateFinalPrice) -> Quote | Basket | QuoteRefusal:
        if args.items is not None:
            return await calculate_basket(self.conn, [(i.product_id, i.quantity) for i in args.items],
                                          args.is_first_purchase)
        return await calculate_final_price(self.conn, args.product_id, args.quantity, args.is_first_purchase)

    async def _rows(self, product_id: str) -> tuple[dict, list]:
        """One product's row and its promotions, read by id (no rows when the product does not exist)."""
        found = await fetch_products(self.conn, [product_id])
        return found, (await fetch_promotions(self.conn, [product_id]) if product_id in found else [])

    async def _receive(self, args: CalculateUnitsToReceive) -> ReceivePlan | QuoteRefusal:
        pid = args.product_id.strip()
        found, promotions = await self._rows(pid)
        if pid not in found:
            return QuoteRefusal(Status.NOT_FOUND, pid, args.units_wanted, f"no product with id {pid}")
        return plan_receive(found[pid], promotions, args.units_wanted, args.is_first_purchase)

    async def _threshold(self, args: CalculateThresholdGap) -> ThresholdPlan | QuoteRefusal:
        """From a product and a quantity, or from a calculation of this turn (its rows are read again by id)."""
        if args.calculation_id is not None:
            entry = self.ledger.entries.get(args.calculation_id.strip())
            calc = entry.record if entry is not None else None
            if isinstance(calc, ReceivePlan):
                calc = calc.quote   # the paid quantity the plan chose
            if not isinstance(calc, (Quote, Basket)):
                return QuoteRefusal(Status.NOT_FOUND, args.calculation_id, 0,
                                    f"{args.calculation_id} is not a price calculation of this turn; "
                                    "call calculate_final_price first")
            ids = normalize_ids([line.product_id for line in (calc.lines if isinstance(calc, Basket) else (calc,))])
            found = await fetch_products(self.conn, ids)
            return plan_threshold_from(calc, found, await fetch_promotions(self.conn, list(found)), args.promotion_id)
        pid = (args.product_id or "").strip()
        found, promotions = await self._rows(pid)
        if pid not in found:
            return QuoteRefusal(Status.NOT_FOUND, pid, args.current_quantity, f"no product with id {pid}")
        return plan_threshold(found[pid], promotions, args.current_quantity, args.promotion_id, args.is_first_purchase)

    async def _compare(self, args: CompareAmounts) -> AmountDifference | ComparisonRefusal:
        """Reads both amounts from the turn's ledger: only what was verified can be compared."""
        amounts = []
        for eid in (args.first_id.strip(), args.second_id.strip()):
            entry = self.ledger.entries.get(eid)
            if entry is None:
                return ComparisonRefusal(Status.NOT_FOUND, f"{eid} is not a verified evidence id of this turn; "
                                                           "verify it first (get_product_details, calculate_final_price)",
                                         (eid,))
            amount = amount_of(entry.record)
            if amount is None:
                return ComparisonRefusal(Status.NOT_AN_AMOUNT, f"{eid} states no price or total", (eid,))
            amounts.append(amount)
        return amount_difference(*amounts)

    async def _details(self, args: GetProductDetails) -> DetailsResult:
        ids = normalize_ids(args.product_ids)
        found = await fetch_products(self.conn, ids)
        details = details_from(ids, found)
        known = [p.product_id for p in details.products]
        return DetailsResult(details, await self._prepare(known, with_details=False, found=found)
                             if self.prepare and known else None)

    async def _prepare(self, ids: list[str], *, with_details: bool, found: dict | None = None) -> Prepared:
        """Verified details, promotions and the price calculation for the likely product (the first):
        the rows are read once (products, then their promotions) and every result is built from them."""
        ids = normalize_ids(ids)
        if found is None:
            found = await fetch_products(self.conn, ids)
        promotions = await fetch_promotions(self.conn, [i for i in ids if i in found])
        return Prepared(promotions=promotions_from(ids, found, promotions),
                        calculation=quote_from(found, promotions, ids[0], self.quantity or 1, self.first_purchase),
                        product_details=details_from(ids, found) if with_details else None)
