"""Reads an answer into sentences, clauses and claims: which products each clause is about, and for
every figure the role the shop's phrasing gives it (售价 → price, 共/实付 → total, 满X → threshold…).

A clause that names no product speaks of the last product named before it; a sentence (up to 。！？；
or a line break) is the unit in which a condition must be stated next to the figure it governs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from guardrails.figures import Mention, find_mentions, normalize
from guardrails.roles import (
    FIRST_PURCHASE_WORDS,
    MONEY_AFTER,
    MONEY_BEFORE,
    QUANTITY_AFTER,
    QUANTITY_BEFORE,
    Kind,
    Role,
)

PRODUCT_ID = re.compile(r"(?:商品\s*ID|商品编号|产品编号|编号|ID)\s*[:：#]?\s*([A-Za-z0-9][A-Za-z0-9_-]*)", re.I)
_SENTENCE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;\n]*")
_CLAUSE = re.compile(r"(?:[^，,]|(?<=\d),(?=\d{3}))+[，,]*")   # 1,999元 is one figure, not two clauses
_ENDS = set("，,。；;！!？?、)）:：\n") | {""}


@dataclass(frozen=True)
class Claim:
    mention: Mention
    role: Role | None        # None: the phrasing does not say; the figure is checked by its kind only
    about: frozenset[str] = frozenset()   # 贵/便宜N元: the product said to be dearer/cheaper (A比B贵N元 → A)
    units: frozenset[Decimal] = frozenset()   # an amount's own quantities: stated since the clause's last amount


@dataclass
class Clause:
    text: str
    named: set[str]          # product ids this clause names
    subject: set[str]        # named, or carried from the last clause that named a product
    claims: list[Claim]
    name_spans: list[tuple[int, int]] = field(default_factory=list)
    stated: str = ""         # the text the checks of facts without numbers read: quoted words blanked

    def __post_init__(self) -> None:
        self.stated = self.stated or self.text


@dataclass
class Sentence:
    text: str
    clauses: list[Clause]

    def claims(self) -> list[Claim]:
        return [c for clause in self.clauses for c in clause.claims]

    @property
    def first_purchase(self) -> bool:
        return bool(FIRST_PURCHASE_WORDS.search(self.text))

    def values(self, *roles: Role | None, kind: Kind | None = None) -> set[Decimal]:
        return {c.mention.value for c in self.claims() if c.role in roles and c.mention.value is not None
                and (kind is None or c.mention.kind == kind)}

    @property
    def quantities(self) -> set[Decimal]:
        """Units the customer buys, as stated in this sentence (买两个, 2支, 付3盒)."""
        return self.values(None, Role.PAID_UNITS, kind=Kind.QUANTITY)


def _last_cue(text: str, table, *, adjacent: bool = False) -> Role | None:
    best: tuple[int, Role] | None = None
    for role, pattern in table:
        for m in pattern.finditer(text):
            if adjacent and len(text) - m.end() > 2:
                continue
            if best is None or m.end() > best[0]:
                best = (m.end(), role)
    return best[1] if best else None


def _first_cue(text: str, table) -> Role | None:
    return next((role for role, pattern in table if pattern.search(text)), None)


def read_roles(text: str) -> list[Claim]:
    """Every figure of a clause with the role its phrasing gives it."""
    claims: list[Claim] = []
    mentions = find_mentions(text)
    money_end = quantity_end = 0
    for m in mentions:
        role = m.role
        if role is None and m.kind == Kind.MONEY:
            role = _first_cue(text[m.end:m.end + 4], MONEY_AFTER) or _last_cue(text[money_end:m.start], MONEY_BEFORE)
        elif role is None and m.kind == Kind.QUANTITY:
            role = (_first_cue(text[m.end:m.end + 4], QUANTITY_AFTER)
                    or _last_cue(text[quantity_end:m.start], QUANTITY_BEFORE, adjacent=True))
            if role == Role.FREE_UNITS and text[m.end:m.end + 1].strip() not in _ENDS:
                role = None   # 送一条替换表带: how many of a gift, not free units of the product
        claims.append(Claim(m, role))
        quantity_end = m.end
        if m.kind in (Kind.MONEY, Kind.DISCOUNT):
            money_end = m.end
    return claims


def names_at(text: str, names: dict[str, str]) -> list[tuple[int, int, str]]:
    """(start, end, product id) of every verified product name in a text, longest name first, in text order."""
    spans: list[tuple[int, int, str]] = []
    for name in sorted(names, key=len, reverse=True):
        if not name:
            continue
        for m in re.finditer(re.escape(name), text):
            if not any(m.start() < e and s < m.end() for s, e, _ in spans):
                spans.append((m.start(), m.end(), names[name]))
    return sorted(spans)


# Quoted words that state nothing about a product: what the customer is told to type or press (请发送“转人工”,
# 回复“退货”), and the customer's own words restated (您说的“包邮”…). Figures inside them stay claims.
_QUOTE = re.compile(r"[“\"「『‘]([^“”\"「」『』‘’\n]{1,12})[”\"」』’]")
_COMMAND_BEFORE = re.compile(r"(?:发送|发|回复|回|输入|键入|打字|点击|点按|点|按|选择|选|搜索|搜|私信|留言|说|直接说|告诉我)"
                             r"(?:一下|一句|个|下)?\s*$")
_CUSTOMER_BEFORE = re.compile(r"(?:您|你)(?:刚才|刚刚|之前)?(?:说|提到|问|写|讲)(?:的|到|了)?\s*$")
_AFFIRMED_AFTER = re.compile(r"^\s*(?:是对的|对的|没错|正确|属实|是真的|可以|有的|没问题|是的|确实)")


def quoted_words(text: str, question: str = "") -> list[tuple[int, int]]:
    """Spans of quoted commands (请发送“转人工”) and of the customer's own words quoted back (您说的“包邮”,
    when the question has them and the answer does not affirm them right after)."""
    spans = []
    for m in _QUOTE.finditer(text):
        before, inner = text[max(0, m.start() - 6):m.start()], m.group(1)
        customer = _CUSTOMER_BEFORE.search(before) and inner in question \
            and not _AFFIRMED_AFTER.search(text[m.end():])
        if _COMMAND_BEFORE.search(before) or customer:
            spans.append((m.start(), m.end()))
    return spans


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each span replaced by commas of the same length (offsets stay valid)."""
    for start, end in spans:
        text = text[:start] + "，" * (end - start) + text[end:]
    return text


def _bind_units(claims: list[Claim]) -> list[Claim]:
    """Give each amount the quantities written right before it in its clause (买5个共245元（4个共196元）:
    245 is for 5, 196 for 4), so a total is checked against its own quantity, not any in the sentence."""
    bound, local = [], set()
    for claim in claims:
        m = claim.mention
        if m.kind == Kind.QUANTITY and claim.role in (None, Role.PAID_UNITS) and m.value is not None:
            local.add(m.value)
        if m.kind == Kind.MONEY:
            claim = Claim(m, claim.role, claim.about, frozenset(local))
        if m.kind in (Kind.MONEY, Kind.DISCOUNT):
            local = set()
        bound.append(claim)
    return bound


_COMPARED_WITH = re.compile(r"比\s*$")
_DIRECTED = (Role.DEARER_BY, Role.CHEAPER_BY)


def _compared(claim: Claim, text: str, at: list[tuple[int, int, str]], carried: set[str]) -> Claim:
    """The product a 贵/便宜 figure speaks of: the first product named before it that is not the one compared
    with (A比B贵N元 → A); with none, the product the sentence was about before this clause."""
    if claim.role not in _DIRECTED:
        return claim
    before = [pid for s, _, pid in at if s < claim.mention.start and not _COMPARED_WITH.search(text[:s])]
    return Claim(claim.mention, claim.role, frozenset(before[:1] or carried))


def read_answer(answer: str, names: dict[str, str], question: str = "") -> list[Sentence]:
    """The answer as sentences of clauses, each with its subject products and its claims. `question`: the
    customer's message, whose own words may be quoted back without stating anything."""
    question = normalize(question or "")
    names = {normalize(name): pid for name, pid in names.items()}
    sentences: list[Sentence] = []
    subject: set[str] = set()
    for sentence_text in _SENTENCE.findall(normalize(answer)) or [answer]:
        clauses = []
        for text in _CLAUSE.findall(sentence_text) or [sentence_text]:
            at = names_at(text, names)
            named = {m.group(1) for m in PRODUCT_ID.finditer(text)} | {pid for _, _, pid in at}
            spans = [(s, e) for s, e, _ in at]
            carried = subject
            if named:
                subject = named
            claims = _bind_units([_compared(c, text, at, carried) for c in read_roles(text)   # 网球（3只装）: a
                                  if not any(c.mention.start < e and s < c.mention.end for s, e in spans)])   # name
            clauses.append(Clause(text, named, set(subject), claims, spans,
                                  _blanked(text, quoted_words(text, question))))
        sentences.append(Sentence(sentence_text, clauses))
    return sentences
