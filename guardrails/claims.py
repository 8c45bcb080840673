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


@dataclass
class Clause:
    text: str
    named: set[str]          # product ids this clause names
    subject: set[str]        # named, or carried from the last clause that named a product
    claims: list[Claim]
    name_spans: list[tuple[int, int]] = field(default_factory=list)


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


def products_named(text: str, names: dict[str, str]) -> tuple[set[str], list[tuple[int, int]]]:
    """Product ids named in a text, by explicit id or by verified product name (longest name first)."""
    found = {m.group(1) for m in PRODUCT_ID.finditer(text)}
    spans: list[tuple[int, int]] = []
    for name in sorted(names, key=len, reverse=True):
        if not name:
            continue
        for m in re.finditer(re.escape(name), text):
            if not any(m.start() < e and s < m.end() for s, e in spans):
                found.add(names[name])
                spans.append((m.start(), m.end()))
    return found, spans


def read_answer(answer: str, names: dict[str, str]) -> list[Sentence]:
    """The answer as sentences of clauses, each with its subject products and its claims."""
    names = {normalize(name): pid for name, pid in names.items()}
    sentences: list[Sentence] = []
    subject: set[str] = set()
    for sentence_text in _SENTENCE.findall(normalize(answer)) or [answer]:
        clauses = []
        for text in _CLAUSE.findall(sentence_text) or [sentence_text]:
            named, spans = products_named(text, names)
            if named:
                subject = named
            claims = [c for c in read_roles(text)   # 网球（3只装）: a figure inside a product's name is its name
                      if not any(c.mention.start < e and s < c.mention.end for s, e in spans)]
            clauses.append(Clause(text, named, set(subject), claims, spans))
        sentences.append(Sentence(sentence_text, clauses))
    return sentences
