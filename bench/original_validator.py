"""The shop's original validator, re-implemented for side-by-side measurement only (DESIGN.md appendix).

Product ids only from `商品ID：X`; amounts only as Arabic digits followed by 元 or preceded by ¥/￥;
an answer passes when its cited ids are verified and each amount, normalized, is among the numbers
seen anywhere in verified tool results. Everything else is not checked.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

_ID = re.compile(r"商品ID：(\w+)")
_AMOUNT = re.compile(r"(\d+(?:\.\d+)?)元|[¥￥](\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def numbers_seen(results: list[dict]) -> set[Decimal]:
    seen: set[Decimal] = set()
    for result in results:
        if result.get("status") == "verified":
            for raw in _NUMBER.findall(json.dumps(result, ensure_ascii=False, default=str)):
                seen.add(Decimal(raw).normalize())
    return seen


def original_validate(answer: str, cited_ids: list[str], verified_ids: set[str], seen: set[Decimal]) -> bool:
    ids = set(_ID.findall(answer)) | set(cited_ids)
    if not ids <= verified_ids:
        return False
    for a, b in _AMOUNT.findall(answer):
        if Decimal(a or b).normalize() not in seen:
            return False
    return True
