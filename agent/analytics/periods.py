"""Natural-language periods ("上个月", "最近7天", "去年双十一", "10月") resolved to a date range in
Asia/Shanghai, deterministically, from an injectable "today". Our own rules cover what jionlp gets
wrong or refuses (上个月, 本月, 10月, 最近N天 ending today, 去年同期); jionlp.parse_time covers the
rest (今年第三季度, 去年双十一, 上周, 近三个月…)."""

from __future__ import annotations

import contextlib
import functools
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import cn2an

_NUM = r"(\d{1,3}|[一二两三四五六七八九十]{1,3})"


@dataclass(frozen=True)
class Period:
    start: date
    end: date          # inclusive
    phrase: str        # the words it was read from

    def __str__(self) -> str:
        return f"{self.start.isoformat()} 至 {self.end.isoformat()}"


def _number(text: str) -> int:
    return int(text) if text.isdigit() else int(cn2an.cn2an(text.replace("两", "二"), "smart"))


def _month_end(year: int, month: int) -> date:
    return (date(year + month // 12, month % 12 + 1, 1)) - timedelta(days=1)


def _month(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), _month_end(year, month)


def _shift_year(day: date, years: int) -> date:
    try:
        return day.replace(year=day.year + years)
    except ValueError:   # 29 February
        return day.replace(year=day.year + years, day=28)


def _this_month(today: date, _m: re.Match[str]) -> tuple[date, date]:
    return today.replace(day=1), today


def _last_month(today: date, _m: re.Match[str]) -> tuple[date, date]:
    first = today.replace(day=1) - timedelta(days=1)
    return _month(first.year, first.month)


def _recent_days(today: date, m: re.Match[str]) -> tuple[date, date]:
    return today - timedelta(days=max(_number(m["n"]), 1) - 1), today


def _named_month(today: date, m: re.Match[str]) -> tuple[date, date]:
    month = _number(m["m"])
    year = {"去年": today.year - 1, "今年": today.year, "前年": today.year - 2}.get(m["y"] or "", None)
    if m["yy"]:
        year = int(m["yy"])
    if year is None:   # "10月" alone: the latest October that has begun
        year = today.year if month <= today.month else today.year - 1
    return _month(year, month)


# Ordered: the first rule that matches decides. Each gives (start, end) from today and the match.
_RULES: tuple[tuple[re.Pattern[str], Callable[[date, re.Match[str]], tuple[date, date]]], ...] = (
    (re.compile("本月|这个月|当月|这月"), _this_month),
    (re.compile("上个?月"), _last_month),
    (re.compile(f"(?:最近|近|过去)\\s*(?P<n>{_NUM})\\s*(?:天|日)"), _recent_days),
    (re.compile(f"(?:(?P<yy>\\d{{4}})年|(?P<y>今年|去年|前年))?(?P<m>{_NUM})月份?(?![\\d日号])"), _named_month),
)
_SAME_PERIOD_LAST_YEAR = re.compile("去年同期|上年同期")


@functools.cache
def _jionlp():
    with contextlib.redirect_stdout(io.StringIO()):   # it prints a banner on import
        import jionlp
    return jionlp


def _from_jionlp(text: str, today: date) -> tuple[date, date] | None:
    jio = _jionlp()
    base = datetime(today.year, today.month, today.day, 12).timestamp()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            parsed = jio.parse_time(text, time_base=base)
    except Exception:   # noqa: BLE001 - the library rejects what it does not know with various errors
        return None
    if parsed.get("type") not in ("time_point", "time_span") or not isinstance(parsed.get("time"), list):
        return None
    start, end = (datetime.fromisoformat(t) for t in parsed["time"][:2])
    if end > start and end.time() == datetime.min.time():   # an exclusive midnight: the day before
        end -= timedelta(seconds=1)
    return start.date(), end.date()


_PERIOD_WORDS = re.compile("年|月|周|星期|礼拜|季度|天|日|号|双十一|双十二|618|昨|今|去|前|上|本|这|最近|近|过去")


def resolve(text: str, today: date) -> Period | None:
    """The period `text` speaks of, clipped to end no later than today; None when it names none."""
    same_period = _SAME_PERIOD_LAST_YEAR.search(text)
    rest = _SAME_PERIOD_LAST_YEAR.sub("", text)
    span, phrase = None, ""
    for pattern, rule in _RULES:
        match = pattern.search(rest)
        if match:
            span, phrase = rule(today, match), match.group(0)
            break
    if span is None and _PERIOD_WORDS.search(rest):
        candidate = _candidate_phrase(rest)
        if candidate:
            span = _from_jionlp(candidate, today)
            phrase = candidate
    if span is None and same_period:
        span, phrase = _this_month(today, same_period), ""
    if span is None:
        return None
    start, end = span
    if same_period:
        start, end, phrase = _shift_year(start, -1), _shift_year(end, -1), f"{phrase}去年同期"
    end = min(end, today)
    if start > end:
        return None
    return Period(start, end, phrase)


_CANDIDATE = re.compile("(?:今年|去年|前年|\\d{4}年)?(?:第?[一二三四1-4]季度|双十一|双十二|618|上半年|下半年)|"
                        f"(?:上|本|这)(?:周|星期|礼拜)|昨天|前天|今天|今年|去年|前年|(?:近|最近|过去){_NUM}个?(?:月|周|星期|年)|"
                        "\\d{4}-\\d{1,2}-\\d{1,2}(?:\\s*(?:至|到|-|~)\\s*\\d{4}-\\d{1,2}-\\d{1,2})?")


def _candidate_phrase(text: str) -> str | None:
    """The time words of a longer question (jionlp parses a time phrase, not a whole sentence)."""
    match = _CANDIDATE.search(text)
    return match.group(0) if match else None
