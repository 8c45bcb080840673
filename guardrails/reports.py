"""The check of an answer computed over orders (an operator's /ask, a customer's own spending): every
number in it — money, counts, units, shares, dates — must be a figure of the cited aggregate evidence,
in the role its sentence gives it ("平均" an average, "一共" a sum, "单" a number of orders…), and of the
group the sentence names ("华东…"). Stricter than the shop answer's validator: an analytic answer is
all figures, so a number with no unit is checked too."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal, InvalidOperation

from guardrails.ledger import WHOLE, EvidenceKind, EvidenceLedger, Figure
from guardrails.roles import MEASURE, Role
from guardrails.validator import (
    NO_CITATION,
    UNKNOWN_CITATION,
    UNVERIFIED_AMOUNT,
    UNVERIFIED_QUANTITY,
    WRONG_ROLE,
    Problem,
    Verdict,
)

UNVERIFIED_DATE = "UNVERIFIED_DATE"
NEEDS_AGGREGATE = "NEEDS_AGGREGATE"
SCOPE_UNSTATED = "SCOPE_UNSTATED"

# The names of metrics an answer may write before a figure, and the named metrics (db/metrics.py's keys,
# mirrored here: guardrails import nothing of ours) such a figure may come from. A 下单额 figure written as
# 销售额 is the wrong figure however exact; generic words (一共, 合计, 订单数) are left to the role.
_NAMED: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile("下单额|下单金额|下单总额"), frozenset({"placed"})),
    (re.compile("下单数|下单量"), frozenset({"placed_count"})),
    (re.compile("退款单数|退款订单数"), frozenset({"refund_count"})),
    (re.compile("退款额|退款金额|退款总额"), frozenset({"refunds"})),
    (re.compile("取消单数|取消订单数"), frozenset({"cancelled"})),
    (re.compile("客单价"), frozenset({"average"})),
    (re.compile("销售额|成交额|营业额"), frozenset({"total"})),
)
_NAME_LABEL = {"placed": "下单额", "placed_count": "下单数", "refund_count": "退款单数", "refunds": "退款额",
               "cancelled": "取消单数", "average": "客单价", "total": "销售额", "count": "订单数", "units": "售出件数",
               "max": "最高一单", "min": "最低一单"}

_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})(?:-(\d{1,2}))?(?!\d)")
_NUMBER = re.compile(r"(?<![\dA-Za-z.,:_-])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?\s*(元|块|%|％|单|笔|"
                     f"{MEASURE[3:-1]}|个月|天|周|月|日|号|年|季度)?")
_CUES: tuple[tuple[Role, re.Pattern[str]], ...] = (
    (Role.AVERAGE, re.compile("平均|客单价|均价|人均|每单")),
    (Role.LARGEST, re.compile("最高|最大|最多")),
    (Role.SMALLEST, re.compile("最低|最小|最少")),
    (Role.SHARE, re.compile("占比|占了?|比例")),
    (Role.ORDER_COUNT, re.compile("订单数|单数|笔数|多少单")),
    (Role.UNITS_SOLD, re.compile("件数|销量|卖出|售出|卖了")),
    (Role.ORDER_TOTAL, re.compile("一共|总额|合计|总计|总共|共计|销售额|营业额|成交额|收入|花了|消费|金额|实付")),
)
_BY_UNIT = {"元": Role.ORDER_TOTAL, "块": Role.ORDER_TOTAL, "%": Role.SHARE, "％": Role.SHARE,
            "单": Role.ORDER_COUNT, "笔": Role.ORDER_COUNT}
_MONEY_ROLES = {Role.ORDER_TOTAL, Role.AVERAGE, Role.LARGEST, Role.SMALLEST}
_CLAUSE = re.compile(r"[^，；;。！？!?\n]+")   # not at ",": it is a thousands separator too
_TIME_UNITS = {"个月", "天", "周", "月", "日", "号", "年", "季度"}


def _cue(before: str) -> Role | None:
    """The closest role word before a figure in its clause."""
    best: tuple[int, Role] | None = None
    for role, pattern in _CUES:
        for match in pattern.finditer(before):
            if best is None or match.end() > best[0]:
                best = (match.end(), role)
    return best[1] if best else None


def _roles_for(unit: str | None, cue: Role | None) -> set[Role]:
    """The evidence roles a figure may come from, given its unit and the word before it."""
    if unit in ("元", "块"):
        return {cue} if cue in _MONEY_ROLES else _MONEY_ROLES
    if unit in ("%", "％"):
        return {Role.SHARE}
    if unit in ("单", "笔"):
        return {Role.ORDER_COUNT}
    if unit:   # a measure word: items
        return {Role.UNITS_SOLD}
    return {cue} if cue else set(Role)


def _period_dates(pool: Sequence) -> set[date]:
    return {d for e in pool for d in getattr(e.record, "period", ()) if d is not None}


def _time_word_ok(value: Decimal, unit: str, dates: set[date]) -> bool:
    """"10月", "7天", "2026年", "第三季度": consistent with the cited period."""
    if not dates:
        return False
    start, end = min(dates), max(dates)
    if unit in ("月",):
        return value in {Decimal(d.month) for d in dates}
    if unit == "年":
        return value in {Decimal(d.year) for d in dates}
    if unit in ("天",):
        return value == (end - start).days + 1
    if unit in ("日", "号"):
        return value in {Decimal(d.day) for d in dates}
    if unit == "季度":
        return value == (start.month - 1) // 3 + 1
    return unit in ("个月", "周")


def _named_metric(before: str) -> frozenset[str] | None:
    """The named metrics the closest metric name before a figure allows (None: no name is written)."""
    best: tuple[int, frozenset[str]] | None = None
    for pattern, keys in _NAMED:
        for match in pattern.finditer(before):
            if best is None or match.end() > best[0]:
                best = (match.end(), keys)
    return best[1] if best else None


def _scope_problems(answer: str, pool: Sequence) -> list[Problem]:
    """An aggregate of a named metric is stated with the orders it counted (their statuses) and its period."""
    problems: list[Problem] = []
    for entry in pool:
        record = entry.record
        if getattr(record, "definition_key", None) is None:
            continue
        if not any(all(word in answer for word in words) for words in record.stated_by):
            counted = "、".join(record.stated_by[-1])
            problems.append(Problem(SCOPE_UNSTATED, f"say which orders {entry.evidence_id} counted: "
                                                    f"{' or '.join('、'.join(w) for w in record.stated_by)} "
                                                    f"(e.g. 按{counted}订单统计)"))
        start, end = record.period
        if start is not None and end is not None and not (start.isoformat() in answer and end.isoformat() in answer):
            problems.append(Problem(SCOPE_UNSTATED, f"state the period {entry.evidence_id} counted: "
                                                    f"{start.isoformat()} 至 {end.isoformat()}"))
        elif start is None and end is None and not re.search("全部历史|至今|所有时间|历史上", answer):
            problems.append(Problem(SCOPE_UNSTATED, f"say that {entry.evidence_id} counts the whole history (全部历史)"))
    return problems


def check_report(answer: str, citation_ids: Iterable[str], ledger: EvidenceLedger,
                 require_scope: bool = True) -> Verdict:
    """`require_scope`: the answer must say which statuses and period each named metric counted (a chart's
    title, drawn with its scope beneath it, need not)."""
    citations = list(dict.fromkeys(citation_ids))
    problems: list[Problem] = []
    unknown = [c for c in citations if c not in ledger]
    if unknown:
        problems.append(Problem(UNKNOWN_CITATION, f"{', '.join(unknown)} is not the id of a tool result in this turn"))
    pool = [e for e in ledger.cited(citations) if e.kind == EvidenceKind.AGGREGATE]
    if not pool:
        problems.append(Problem(NO_CITATION if not citations else NEEDS_AGGREGATE,
                                "cite the agg: evidence of query_orders that holds the figures"))
        return Verdict(tuple(problems))
    figures = [f for e in pool for f in e.figures]
    keys = {f.source for f in figures} - {WHOLE}
    dates = _period_dates(pool)
    named = {e.evidence_id: getattr(e.record, "definition_key", None) for e in pool}
    for clause_match in _CLAUSE.finditer(answer):
        clause = clause_match.group(0)
        problems += _check_clause(clause, figures, keys, dates, named)
    if require_scope:
        problems += _scope_problems(answer, pool)
    return Verdict(tuple(problems))


def _names(clause: str, keys: set[str]) -> list[tuple[int, int]]:
    """Where the result's group keys are written in a clause (longest first): 运动袜（3双装）is a product's
    name, and the 3双 in it is not a figure to check."""
    spans: list[tuple[int, int]] = []
    for key in sorted(keys, key=len, reverse=True):
        for m in re.finditer(re.escape(key), clause):
            if not any(m.start() < e and s < m.end() for s, e in spans):
                spans.append(m.span())
    return spans


def _check_clause(clause: str, figures: list[Figure], keys: set[str], dates: set[date],
                  named: dict[str, str | None]) -> list[Problem]:
    problems: list[Problem] = []
    taken: list[tuple[int, int]] = [span for span in _names(clause, keys) if not _DATE.fullmatch(clause[slice(*span)])]
    for m in _DATE.finditer(clause):
        taken.append(m.span())
        text = m.group(0)
        try:
            day = date(int(m[1]), int(m[2]), int(m[3])) if m[3] else None
        except ValueError:
            day = None
        month_key = f"{int(m[1]):04d}-{int(m[2]):02d}"
        ok = (day in dates or day is not None and day.isoformat() in keys) if m[3] else \
            (month_key in keys or any(d.strftime("%Y-%m") == month_key for d in dates))
        if not ok:
            problems.append(Problem(UNVERIFIED_DATE, f"'{text}' is neither the period used nor a group of the result"))
    for m in _NUMBER.finditer(clause):
        if any(a <= m.start() < b for a, b in taken):
            continue
        whole, fraction, unit = m.group(1).replace(",", ""), m.group(2), m.group(3)
        try:
            value = Decimal(f"{whole}.{fraction}" if fraction else whole)
        except InvalidOperation:
            continue
        if unit in _TIME_UNITS:
            if not _time_word_ok(value, unit, dates):
                problems.append(Problem(UNVERIFIED_DATE, f"'{m.group(0)}' does not match the period used"))
            continue
        roles = _roles_for(unit, _cue(clause[:m.start()]))
        groups = [k for k in keys if k in clause[:m.start()]]
        group = max(groups, key=lambda k: clause.rfind(k, 0, m.start())) if groups else None
        allowed = _named_metric(clause[:m.start()])
        holding = [f for f in figures if f.value == value]
        right = [f for f in holding if f.role in roles and (group is None or f.source == group) and
                 (allowed is None or named.get(f.evidence_id) is None or named[f.evidence_id] in allowed)]
        if right:
            continue
        text = m.group(0).strip()
        if holding:
            what = ", ".join(sorted({f"the {_NAME_LABEL.get(named.get(f.evidence_id) or '', f.role)} of {f.source}"
                                     for f in holding}))
            wanted = " / ".join(sorted(r.value for r in roles)) if len(roles) < len(Role) else "this figure"
            problems.append(Problem(WRONG_ROLE, f"'{text}' is {what}, not the {wanted}"
                                                f"{f' of {group}' if group else ''} as this sentence states"))
        else:
            code = UNVERIFIED_AMOUNT if unit in ("元", "块") else UNVERIFIED_QUANTITY
            problems.append(Problem(code, f"'{text}' is not a figure of the cited aggregate"))
    return problems
