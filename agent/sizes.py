"""Sizes written as a number and a unit — 四人, 双人, 4号, 12公斤, 25升, 31寸, a range 100-130厘米, 尺码36-46 —
in a product record (what it comes in) and in a message (the size a customer asks for: 四人帐篷, 4号足球)."""

from __future__ import annotations

import re
from decimal import Decimal

from guardrails.figures import NUM, parse_number
from retrieval.text import fold

# A unit as written → the unit compared (千克 and kg are 公斤).
_SIZE_UNITS = {"人": "人", "号": "号", "公斤": "公斤", "千克": "公斤", "kg": "公斤", "斤": "斤", "升": "升", "l": "升",
               "毫升": "毫升", "ml": "毫升", "码": "码", "寸": "寸", "英寸": "寸", "厘米": "厘米", "cm": "厘米", "磅": "磅"}
# (小一号, 大一码, 大半码: one size up or down, no size of its own)
_SIZE = re.compile(rf"(?<![小大])(?P<low>{NUM}|双|单)(?:\s*[-~至到]\s*(?P<high>{NUM}))?\s*"
                   f"(?P<unit>{'|'.join(sorted(_SIZE_UNITS, key=len, reverse=True))})(?![a-z])")
_SHOE_SIZES = re.compile(rf"尺码\s*[:：]?\s*(?P<low>{NUM})(?:\s*[-~至到]\s*(?P<high>{NUM}))?(?![\d.])(?!\s*[-~至到号])")


def _size_value(raw: str) -> Decimal | None:
    return {"双": Decimal(2), "单": Decimal(1)}.get(raw) or parse_number(raw)


def sizes(text: str) -> dict[str, list[tuple[Decimal, Decimal]]]:
    """The sizes a text states, by unit: 2人用 → {人: [(2, 2)]}, 尺码7-10号 → {号: [(7, 10)]}."""
    out: dict[str, list[tuple[Decimal, Decimal]]] = {}
    folded = fold(text)
    for m in _SIZE.finditer(folded):
        low = _size_value(m.group("low"))
        high = parse_number(m.group("high")) if m.group("high") else low
        if low is not None and high is not None:
            out.setdefault(_SIZE_UNITS[m.group("unit")], []).append((low, high))
    for m in _SHOE_SIZES.finditer(folded):   # 尺码36-46: the unit before the numbers
        low, high = parse_number(m.group("low")), parse_number(m.group("high") or m.group("low"))
        if low is not None and high is not None:
            out.setdefault("码", []).append((low, high))
    return out


def size_before(text: str, name: str) -> tuple[str, str, Decimal] | None:
    """(the phrase, the unit, the value) of a size written right before a name in a message (folded): 有四人帐篷吗
    → 四人帐篷, 人, 4; 4号足球 → 4号足球, 号, 4 — the customer asks for that size of the thing, not for any."""
    at = text.find(name)
    found = [m for m in _SIZE.finditer(text[:at]) if m.end() >= at - 1] if at > 0 else []
    if not found or found[-1].group("high"):
        return None
    value = _size_value(found[-1].group("low"))
    if value is None:
        return None
    return text[found[-1].start():at + len(name)], _SIZE_UNITS[found[-1].group("unit")], value


# The units of a size that a customer asks of goods (not of themselves: 80公斤 and 175厘米 are their weight, height).
GOODS_UNITS = frozenset({"人", "号", "升", "毫升", "码", "寸"})


def _asked(text: str):
    """The sizes a message asks for in a unit goods are sized in: (as written, unit, value, a range written?)."""
    for m in _SIZE.finditer(fold(text)):
        unit = _SIZE_UNITS[m.group("unit")]
        value = _size_value(m.group("low"))
        if unit in GOODS_UNITS and value is not None:
            yield m.group(0), unit, value, bool(m.group("high"))


def size_stated(text: str, record: str) -> bool:
    """Whether a size the message asks for (5号, 42码) is one the product's record states (its unit, its range)."""
    stated = sizes(record)
    return any(any(low <= value <= high for low, high in stated.get(unit, ())) for _, unit, value, _ in _asked(text))


def size_unstated(text: str, record: str) -> str:
    """A size the message asks for (50升的登山包, 她穿28码) in a unit the product's record states sizes in, none of which
    holds it: the size as written; '' when there is none (the shop cannot say it has that size)."""
    stated = sizes(record)
    return next((written for written, unit, value, ranged in _asked(text) if not ranged and stated.get(unit)
                 and not any(low <= value <= high for low, high in stated[unit])), "")
