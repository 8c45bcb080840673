"""Finds and normalizes the figures a shop answer can state: money, discounts, stock, quantities, and the
durations and times of day of store policies.

Numerals are converted by cn2an (non-strict, on isolated numeral spans only, through Decimal(str(x)));
this module holds only the shop-phrase grammar around them: 元/块/RMB/¥, 万, X块Y, N折, 半价,
percentages that describe a discount, 满X减Y, 买X送Y, 库存N件, N个/件/支/双…, 7天/48小时 and 9:00/晚上9点.
A pattern that fixes what a figure means (满X is a spend threshold) gives the Mention its role.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

import cn2an

from guardrails.roles import MEASURE, Kind, Role

MONEY, DISCOUNT, STOCK, QUANTITY, DURATION, CLOCK = (Kind.MONEY, Kind.DISCOUNT, Kind.STOCK, Kind.QUANTITY,
                                                     Kind.DURATION, Kind.CLOCK)

_CN_DIGIT = "零〇一二两三四五六七八九壹贰叁肆伍陆柒捌玖"
_CN_UNIT = "十拾百佰千仟万亿"
_CN_NUM = f"[{_CN_DIGIT}{_CN_UNIT}](?:[{_CN_DIGIT}{_CN_UNIT}]|点(?=[{_CN_DIGIT}]))*"
_AR_NUM = r"(?<![\d.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:万|千)?"
NUM = f"(?:{_AR_NUM}|{_CN_NUM})"
_YUAN = "(?:元|块钱|块|RMB|CNY|人民币)"
_RANGE = re.compile(f"[{_CN_DIGIT[2:]}]{{2}}")  # 两三百, 三四十: a range, not 23 or 34
_ONE_DIGIT = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2, "〇": 0}


@dataclass(frozen=True)
class Mention:
    """One figure found in a text. `value` is None when the text is too vague to check (两三百)."""

    kind: Kind
    value: Decimal | None
    text: str
    start: int
    end: int
    role: Role | None = None   # set when the phrase itself says what the figure is (满X, 买X送Y, N折, 库存N)


def normalize(text: str) -> str:
    """NFKC: fullwidth digits and symbols become ASCII (１２０ → 120, ￥ → ¥)."""
    return unicodedata.normalize("NFKC", text)


def parse_number(raw: str) -> Decimal | None:
    """'1,200' → 1200, '1.2万' → 12000, '一百二十' → 120, '两千' → 2000; a range or junk → None."""
    raw = raw.strip()
    if not raw:
        return None
    scale = Decimal(1)
    if raw[-1] in "万千" and raw[0].isdigit():
        scale = Decimal(10000 if raw[-1] == "万" else 1000)
        raw = raw[:-1]
    if raw[0].isdigit():
        try:
            return Decimal(raw.replace(",", "")) * scale
        except InvalidOperation:
            return None
    if _RANGE.search(raw.split("点")[0]):
        return None
    try:
        return Decimal(str(cn2an.cn2an(raw, "normal")))
    except (ValueError, KeyError, IndexError, InvalidOperation):
        return None


def _digit(ch: str) -> int | None:
    if ch.isdigit():
        return int(ch)
    return _ONE_DIGIT.get(ch)


def _discount_from_zhe(raw: str) -> Decimal | None:
    """9 → 0.9, 95 → 0.95, 8.5 → 0.85, 九 → 0.9, 九五 → 0.95; anything else → None."""
    if raw.replace(".", "", 1).isdigit():
        value = Decimal(raw)
        if "." in raw:
            value = value / 10
        elif len(raw) == 1:
            value = value / 10
        elif len(raw) == 2:
            value = value / 100
        else:
            return None
    else:
        digits = [_digit(c) for c in raw]
        if not 1 <= len(digits) <= 2 or None in digits:
            return None
        value = Decimal(digits[0]) / 10 + (Decimal(digits[1]) / 100 if len(digits) == 2 else 0)
    return value if 0 < value < 1 else None


def _jiao(raw: str) -> Decimal | None:
    if raw == "半":
        return Decimal("0.5")
    digit = _digit(raw)
    return None if digit is None else Decimal(digit) / 10


_OFF_WORDS = ("减", "优惠", "省", "降", "便宜", "立减", "off", "OFF")
_DISCOUNT_CONTEXT = ("折", "优惠", "减", "省", "降", "便宜", "价", "打", "off", "OFF", "活动")

# (name, pattern) in priority order: an earlier pattern claims its span first.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("spend_reduce", re.compile(f"满\\s*(?P<a>{NUM})\\s*{_YUAN}?\\s*(?:立)?减\\s*(?P<b>{NUM})\\s*{_YUAN}?")),
    ("buy_get", re.compile(f"买\\s*(?P<a>{NUM})\\s*{MEASURE}?\\s*(?:送|赠)\\s*(?P<b>{NUM})\\s*{MEASURE}?")),
    ("spend", re.compile(f"满\\s*(?P<a>{NUM})(?![\\d.,])(?!\\s*{MEASURE})\\s*{_YUAN}?")),
    # (两块一共多少: 一共 is "in all", no dime)
    ("yuan_jiao", re.compile(f"(?P<a>{NUM})\\s*块\\s*(?P<j>[一二两三四五六七八九半\\d])\\s*毛?"
                             f"(?![\\d{_CN_DIGIT}]|\\s*{MEASURE}|(?<=一)[共起下样些])")),
    ("yuan_jiao", re.compile(f"(?P<a>{NUM})\\s*元\\s*(?P<j>[一二两三四五六七八九\\d])\\s*角")),
    ("money", re.compile(f"(?:¥|RMB|CNY|人民币)\\s*(?P<a>{NUM})\\s*(?:元|块钱|块)?")),
    ("money", re.compile(f"(?P<a>{NUM})\\s*{_YUAN}")),
    ("zhe", re.compile("(?P<a>\\d+(?:\\.\\d+)?|[一二三四五六七八九]{1,2})\\s*折")),
    ("half", re.compile("半价|对折")),
    ("percent", re.compile(f"(?P<a>\\d+(?:\\.\\d+)?)\\s*%|百分之\\s*(?P<b>{NUM})")),
    ("clock", re.compile("(?P<pre>早上|上午|中午|下午|晚上|凌晨)?\\s*(?P<h>\\d{1,2})\\s*:\\s*(?P<m>\\d{2})")),
    ("clock", re.compile("(?P<pre>早上|上午|中午|下午|晚上|凌晨)?\\s*(?P<h>\\d{1,2})\\s*点\\s*(?:(?P<m>\\d{1,2})分|(?P<half>半))?")),
    ("clock", re.compile("(?P<pre>早上|上午|中午|下午|晚上|凌晨)\\s*(?P<h>[一二两三四五六七八九十]{1,3})\\s*点\\s*(?P<half>半)?")),
    ("duration", re.compile(f"(?P<a>{NUM})\\s*(?:(?:到|至|-|~|—)\\s*(?P<b>{NUM})\\s*)?(?P<u>个工作日|个月|天|小时|分钟|周)")),
    ("stock", re.compile(f"(?:库存|现货|有货|剩余|还剩|仅剩|只剩|余量)(?:数量|量)?[为是有还仅只约剩:\\s]*(?P<a>{NUM})\\s*{MEASURE}?")),
    ("quantity", re.compile(f"(?P<a>{NUM})\\s*{MEASURE}")),
]


def _percent_mentions(text: str, m: re.Match[str]) -> list[Mention]:
    raw = m.group("a") or m.group("b")
    value = parse_number(raw)
    before, after = text[max(0, m.start() - 4):m.start()], text[m.end():m.end() + 4]
    if not any(w in before or w in after for w in _DISCOUNT_CONTEXT):
        return []  # 100%纯棉 is not a discount
    if value is None or not 0 < value < 100:
        return [Mention(DISCOUNT, None, m.group(0), m.start(), m.end(), Role.RATE)]
    fraction = value / 100
    off = any(before.endswith(w) or w in before for w in _OFF_WORDS)
    return [Mention(DISCOUNT, (1 - fraction) if off else fraction, m.group(0), m.start(), m.end(), Role.RATE)]


_HOURS = {"个工作日": Decimal(24), "天": Decimal(24), "周": Decimal(168), "个月": Decimal(720), "小时": Decimal(1),
          "分钟": Decimal(1) / 60}


def _clock(m: re.Match[str]) -> Decimal | None:
    hour = parse_number(m.group("h"))
    minutes = Decimal(m.group("m")) if m.groupdict().get("m") else Decimal(30 if m.group("half") else 0)
    if hour is None or hour > 24 or minutes >= 60:
        return None
    if m.group("pre") in ("下午", "晚上") and hour < 12:
        hour += 12
    return hour * 60 + minutes


def _mentions_for(name: str, text: str, m: re.Match[str]) -> list[Mention]:
    span, s, e = m.group(0), m.start(), m.end()
    if name == "spend_reduce":
        return [Mention(MONEY, parse_number(m.group("a")), span, s, e, Role.THRESHOLD),
                Mention(MONEY, parse_number(m.group("b")), span, s, e, Role.REDUCTION)]
    if name == "buy_get":
        return [Mention(QUANTITY, parse_number(m.group("a")), span, s, e, Role.PAID_UNITS),
                Mention(QUANTITY, parse_number(m.group("b")), span, s, e, Role.FREE_UNITS)]
    if name == "spend":
        return [Mention(MONEY, parse_number(m.group("a")), span, s, e, Role.THRESHOLD)]
    if name == "money":
        return [Mention(MONEY, parse_number(m.group("a")), span, s, e)]
    if name == "clock":
        return [Mention(CLOCK, _clock(m), span, s, e)]
    if name == "duration":
        hours = _HOURS[m.group("u")]
        values = [parse_number(m.group("a"))] + ([parse_number(m.group("b"))] if m.group("b") else [])
        return [Mention(DURATION, None if v is None else v * hours, span, s, e) for v in values]
    if name == "yuan_jiao":
        whole, jiao = parse_number(m.group("a")), _jiao(m.group("j"))
        return [Mention(MONEY, None if whole is None or jiao is None else whole + jiao, span, s, e)]
    if name == "zhe":
        return [Mention(DISCOUNT, _discount_from_zhe(m.group("a")), span, s, e, Role.RATE)]
    if name == "half":
        return [Mention(DISCOUNT, Decimal("0.5"), span, s, e, Role.RATE)]
    if name == "percent":
        return _percent_mentions(text, m)
    if name == "stock":
        return [Mention(STOCK, parse_number(m.group("a")), span, s, e, Role.STOCK)]
    return [Mention(QUANTITY, parse_number(m.group("a")), span, s, e)]


def find_mentions(text: str) -> list[Mention]:
    """Every money, discount, stock and quantity figure in `text`, in order of appearance.

    Offsets refer to the NFKC-normalized text (which has the same length for CJK and ASCII input,
    and is what callers should slice when they need the span).
    """
    return list(_find(text))


@lru_cache(maxsize=8192)
def _find(text: str) -> tuple[Mention, ...]:
    """find_mentions, remembered: the same product and policy texts are read into every turn's ledger."""
    text = normalize(text)
    claimed: list[tuple[int, int]] = []
    found: list[Mention] = []
    for name, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in claimed):
                continue
            mentions = _mentions_for(name, text, m)
            if mentions:
                claimed.append((m.start(), m.end()))
                found.extend(mentions)
    found.sort(key=lambda x: x.start)
    return tuple(found)
