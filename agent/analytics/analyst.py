"""Questions answered by computing over orders: an operator's /ask about the shop's sales, and a
customer's questions about their own spending. Read deterministically (metrics, group, filters,
period, chart), computed by fixed SQL (db/aggregates), written from a template, and released only when
guardrails.reports.check_report finds every figure in the cited aggregates."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from pydantic import BaseModel

from agent.analytics.charts import ChartKind, draw_chart
from agent.analytics.operator_tools import OPERATOR_TOOLS, ChartDrawn, MakeChart, QueryOrders, operator_prompt
from agent.analytics.periods import Period, resolve
from agent.loop import GiveUp, ToolLoop, Toolset
from agent.models import ChatModel, ModelError
from agent.tools import SubmitAnswer, ToolError
from agent.trace import ToolTrace, TurnResult, TurnTrace, VerdictTrace
from db.aggregates import Aggregate, AggregateError, Dimension, OrderAnalytics, OrderQuery, metric_query
from db.metrics import DEFINITIONS, PAID, Metric, MetricKey, statuses_phrase
from db.pricing import yuan
from db.schema import REGIONS
from guardrails.ledger import EvidenceKind, EvidenceLedger
from guardrails.reports import check_report
from guardrails.validator import Problem, Verdict

log = logging.getLogger(__name__)

GROUNDED, INSUFFICIENT = "grounded", "insufficient_evidence"
USE_SUBMIT = "Your reply was not delivered. Call submit_answer with the answer and the agg: ids it rests on."
NOT_GROUNDED = "NOT_GROUNDED"
CAPTION_LIMIT = 1024

_METRIC_WORDS: tuple[tuple[MetricKey, re.Pattern[str]], ...] = tuple((d.key, re.compile(d.words)) for d in DEFINITIONS)
_GROUP_WORDS: tuple[tuple[Dimension, re.Pattern[str]], ...] = (
    (Dimension.REGION, re.compile("各(?:个)?(?:地区|区域|大区)|每个(?:地区|区域)|按(?:地区|区域)|分(?:地区|区域)|哪个(?:地区|区域)")),
    (Dimension.CATEGORY, re.compile("各(?:个)?(?:品类|类目|分类|类别)|每个(?:品类|类目)|按(?:品类|类目|分类)|哪个(?:品类|类目)|哪类")),
    (Dimension.PRODUCT, re.compile("哪些商品|哪个商品|商品排行|卖得最好|最畅销|热销|前\\s*\\d+|top\\s*\\d+", re.IGNORECASE)),
    (Dimension.STATUS, re.compile("各(?:个)?状态|按状态|每种状态")),
    (Dimension.DAY, re.compile("每天|按天|每日|逐日")),
    (Dimension.WEEK, re.compile("每周|按周|每星期")),
    (Dimension.MONTH, re.compile("每个?月|按月|月度|逐月")),
)
# The statuses an operator may name (ordered: 待付款 before 已付款, whose 付款 it contains).
_STATUS_WORDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("待付款",), "待付款|未付款"), (PAID, "已付款|付过款|付了款"), (("已签收",), "已签收|签收|已完成|完成的?订单"),
    (("已取消",), "已取消|取消"), (("已退款",), "已退款|退款"), (("运输中",), "运输中|在途"),
    (("待发货",), "待发货|未发货"))
_CHART_WORDS = {ChartKind.PIE: "饼图|饼状图", ChartKind.BAR: "柱状图|条形图|柱形图|柱图",
                ChartKind.LINE: "折线图|趋势图|走势图|曲线"}
_TOP = re.compile("(?:前|top\\s*)(\\d{1,2})", re.IGNORECASE)

# A customer asking about their own orders in figures; and about the shop's business (refused).
_OWN = re.compile("我|我的|本人")
_OWN_FIGURES = re.compile("花了多少|消费了?多少|花费|一共买了多少|[买下][了过]几单|[买下][了过]多少单|订单数|"
                          "买了多少钱|付了多少|几个订单|多少个订单|多少笔")
# How many orders, and nothing of money (我在你们家下过几单了): the orders themselves are listed, not a count of the paid
_COUNT_ONLY = re.compile("几单|多少单|几个订单|多少个订单|多少笔|订单数")
_MONEY = re.compile("花|消费|钱|付|金额|元|块")
# One order pointed at (瑜伽垫那个订单我付了多少钱, 11月2号下的那单花了多少): that order's amount, not a sum of spending
_ONE_ORDER = re.compile(r"[那这哪]一?[个笔]?(?:订单|单子|单)(?!价)|(?:上[回次]|那次)买")   # …上回买足球花了多少
_SHOP_FIGURES = re.compile("(?:店里|你们|店铺|商店|本店|全店|别人|其他(?:顾客|用户|人)).{0,8}"
                           "(?:卖了多少|卖出多少|销售额|营业额|成交额|多少单|几单|流水|收入|赚了|买了多少|买了什么)|"
                           "销售额|营业额|成交额|销量排行|卖了多少单")
SHOP_DATA_REFUSAL = "抱歉，店铺的经营数据和其他顾客的信息不能对外提供。我可以帮您查询您自己的订单和消费，例如“我这个月花了多少钱”。"


@dataclass(frozen=True)
class Ask:
    """What an analytic question asks. `statuses`: the ones the operator named (else each metric's own)."""
    metrics: tuple[MetricKey, ...]
    period: Period | None
    group_by: Dimension | None = None
    statuses: tuple[str, ...] = ()
    region: str | None = None
    category: str | None = None
    chart: ChartKind | None = None
    top_n: int = 10

    @property
    def status(self) -> str | None:
        """The one status named, if exactly one was."""
        return self.statuses[0] if len(self.statuses) == 1 else None


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in taken)


def read_question(text: str, today: date, categories: frozenset[str] = frozenset()) -> Ask:
    found: list[tuple[int, MetricKey]] = []
    taken: list[tuple[int, int]] = []
    for metric, pattern in _METRIC_WORDS:   # the more specific names first: 退款金额 is not 金额
        for match in pattern.finditer(text):
            if not _overlaps(match.span(), taken):
                found.append((match.start(), metric))
                taken.append(match.span())
    metrics = tuple(dict.fromkeys(metric for _, metric in sorted(found)))   # in the order asked
    statuses: list[str] = []
    for named, words in _STATUS_WORDS:   # a status inside a metric's name (退款额) is that metric's, not a filter
        for match in re.finditer(words, text):
            if not _overlaps(match.span(), taken):
                statuses += [s for s in named if s not in statuses]
                taken.append(match.span())
    group = next((d for d, pattern in _GROUP_WORDS if pattern.search(text)), None)
    chart = next((k for k, words in _CHART_WORDS.items() if re.search(words, text)), None)
    if chart is not None and group is None:
        group = Dimension.MONTH if chart is ChartKind.LINE else Dimension.REGION
    top = _TOP.search(text)
    return Ask(
        metrics=metrics or (MetricKey.ORDERS, MetricKey.SALES),
        period=resolve(text, today),
        group_by=group,
        statuses=tuple(statuses),
        region=next((r for r in REGIONS if r in text), None),
        category=next((c for c in sorted(categories, key=len, reverse=True) if c and c in text), None),
        chart=chart,
        top_n=int(top.group(1)) if top else 10)


@dataclass
class Report:
    """A released (or refused) analytic answer, with its trace for the audit."""
    answer: str
    status: str
    citations: list[str] = field(default_factory=list)
    chart: bytes | None = None
    caption: str = ""                 # the chart's caption, checked on its own
    trace: TurnTrace = field(default_factory=lambda: TurnTrace(model="analyst"))

    @property
    def helped(self) -> bool:
        return self.status == GROUNDED

    def as_turn(self) -> TurnResult:
        """The shape the conversation, the audit and /stats know."""
        return TurnResult(self.answer, self.status, list(self.citations), trace=self.trace)


def _figure(metric: Metric, value) -> str:
    if metric is Metric.COUNT:
        return f"{value}单"
    if metric is Metric.UNITS:
        return f"{value}件"
    return f"{value}元"


def _when(period: Period | None) -> str:
    return f"{period.phrase or '期间'}（{period}）" if period else "全部历史"


def _where(ask: Ask) -> str:
    return "".join(x for x in (ask.region, ask.category) if x)


def counted(aggregate: Aggregate) -> str:
    """"按已付款订单（待发货、运输中、已签收）统计": which orders an aggregate counted."""
    return f"按{statuses_phrase(aggregate.statuses)}统计"


def _label(aggregate: Aggregate) -> str:
    definition = aggregate.definition
    return definition.label_for(aggregate.statuses) if definition else _MEASURE_LABEL[aggregate.query.metric]


_MEASURE_LABEL = {Metric.COUNT: "订单数", Metric.TOTAL: "金额", Metric.AVERAGE: "平均每单", Metric.MAX: "最高一单",
                  Metric.MIN: "最低一单", Metric.UNITS: "售出件数"}


def _refusal(exc: AggregateError) -> str:
    if "longer than" in str(exc):
        return "抱歉，这个统计查询超时没能完成，请缩小时间范围后再试。"
    return (f"抱歉，这个统计的条件不成立（地区只能是{'、'.join(REGIONS)}；日期范围的开始不能晚于结束；"
            "排行最多前50名），请换个问法再试。")


class Analyst:
    """`model`: a chat model for /ask (the operator tool set); None: the deterministic reading alone.
    Whatever the model does, an answer is released only when check_report passes; when the model
    cannot get there within its budget, the deterministic answer is given (and the turn marked degraded)."""

    def __init__(self, analytics: OrderAnalytics, today: Callable[[], date], model: ChatModel | None = None,
                 max_model_calls: int = 6, max_rejections: int = 2, budget_seconds: float = 40.0):
        self.analytics, self.today, self.model = analytics, today, model
        self.loop, self.budget_seconds = ToolLoop(max_model_calls, max_rejections), budget_seconds
        self._categories: frozenset[str] | None = None

    async def categories(self) -> frozenset[str]:
        if self._categories is None:
            rows = await self.analytics.conn.execute_fetchall("SELECT DISTINCT category FROM products")
            self._categories = frozenset(r[0] for r in rows if r[0])
        return self._categories

    async def _run(self, query: OrderQuery, ledger: EvidenceLedger, trace: TurnTrace | None = None) -> Aggregate:
        """One aggregate, filed in the ledger; traced here when no tool loop traces it."""
        started = time.perf_counter()
        result = await self.analytics.query(query)
        eid = ledger.add_aggregate(result)
        if trace is None:
            return result
        trace.tool_calls.append(ToolTrace("query_orders", {
            "metric": str(query.definition or query.metric), "group_by": query.group_by.value if query.group_by else None,
            "start": str(query.start) if query.start else None, "end": str(query.end) if query.end else None,
            "region": query.region, "category": query.category,
            "statuses": list(query.counted_statuses) if query.counted_statuses else None,
            "scoped_to_user": query.user_id is not None, "top_n": query.top_n},
            str(result.status), round((time.perf_counter() - started) * 1000, 2), [eid]))
        return result

    @staticmethod
    def _caption(report: Report, ledger: EvidenceLedger) -> str:
        """The photo's caption (Telegram allows 1024 characters), checked like any answer."""
        caption = report.answer if len(report.answer) <= CAPTION_LIMIT else report.answer.split("\n", 1)[0]
        verdict = check_report(caption, report.citations, ledger)
        report.trace.verdicts.append(VerdictTrace(verdict.ok, verdict.codes, "caption"))
        return caption if verdict.ok else ""

    def _release(self, answer: str, citations: list[str], ledger: EvidenceLedger, report: Report) -> Report:
        verdict = check_report(answer, citations, ledger)
        report.trace.verdicts.append(VerdictTrace(verdict.ok, verdict.codes, "template", answer[:3000],
                                                  "" if verdict.ok else verdict.message[:2000]))
        if not verdict.ok:   # our own template disagreeing with its evidence is a bug: say nothing unproven
            report.answer, report.status, report.chart = "抱歉，这个统计暂时无法核实，请换个问法再试。", INSUFFICIENT, None
            return report
        report.answer, report.status, report.citations = answer, GROUNDED, citations
        return report

    async def ask(self, text: str) -> Report:
        """An operator's question about the shop's orders: the chat model with the operator tools when there
        is one, else (or when it fails) the deterministic reading."""
        started = time.perf_counter()
        # jionlp (imported on first use, half a second) and its parsing run off the event loop
        ask = await asyncio.to_thread(read_question, text, self.today(), await self.categories())
        if self.model is not None:
            report, ledger = Report("", INSUFFICIENT, trace=TurnTrace(model=self.model.name)), EvidenceLedger()
            try:
                async with asyncio.timeout(self.budget_seconds):
                    await self._ask_model(text, ask, report, ledger)
                return self._finish(report, ledger, started)
            except (ModelError, GiveUp, TimeoutError) as exc:
                log.warning("the chat model gave no releasable report (%s): the deterministic answer instead", exc)
                trace = report.trace
                trace.degraded, trace.degraded_reason = True, "turn budget spent" if isinstance(exc, TimeoutError) \
                    else str(exc)
                return await self._ask_template(ask, Report("", INSUFFICIENT, trace=trace), EvidenceLedger(), started)
        return await self._ask_template(ask, Report("", INSUFFICIENT), EvidenceLedger(), started)

    def _finish(self, report: Report, ledger: EvidenceLedger, started: float) -> Report:
        report.trace.status, report.trace.citations = report.status, report.citations
        report.trace.file_ledger(ledger)
        report.trace.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return report

    async def _ask_model(self, text: str, ask: Ask, report: Report, ledger: EvidenceLedger) -> None:
        """The shared tool loop with the operator tools; a report is released only when check_report finds
        every figure in the cited aggregates (and the model says it is grounded)."""
        period = ask.period
        messages: list[dict] = [
            {"role": "system", "content": operator_prompt(self.today(), period.start if period else None,
                                                          period.end if period else None)},
            {"role": "user", "content": text}]

        async def run(name: str, args: BaseModel) -> Aggregate | ChartDrawn:
            if isinstance(args, QueryOrders):
                return await self._model_query(args, period, ledger)
            if isinstance(args, MakeChart):
                return await self._model_chart(args, ledger, report)
            raise ToolError("UNKNOWN_TOOL", f"{name} is not an operator tool")

        def check(args: SubmitAnswer) -> Verdict:
            if args.status != GROUNDED:
                return Verdict((Problem(NOT_GROUNDED, "only a grounded report is released: cite the agg: ids of "
                                                      "the figures and submit with status grounded"),))
            return check_report(args.answer, args.citation_ids, ledger)

        toolset = Toolset(OPERATOR_TOOLS, run, reminder=USE_SUBMIT)
        released = await self.loop.run(self.model, messages, toolset, check, ledger, report.trace)
        report.answer, report.status, report.citations = released.answer, GROUNDED, released.citations
        if report.chart is not None:
            report.caption = self._caption(report, ledger)

    async def _model_query(self, args: QueryOrders, period: Period | None, ledger: EvidenceLedger) -> Aggregate:
        """The model's query, with its period checked against the one the question names."""
        if period is not None and (args.start, args.end) != (period.start, period.end):
            raise ToolError("PERIOD_MISMATCH", f"the question's period is {period.start} to {period.end} "
                                               f"(Asia/Shanghai): use start={period.start}, end={period.end}")
        try:
            named = tuple(dict.fromkeys([*(args.statuses or ()), *([args.status] if args.status else [])]))
            return await self._run(metric_query(args.metric, named or None, start=args.start, end=args.end,
                                                region=args.region, category=args.category, group_by=args.group_by,
                                                top_n=args.top_n), ledger)
        except AggregateError as exc:
            raise ToolError("QUERY_FAILED", str(exc)) from None

    async def _model_chart(self, args: MakeChart, ledger: EvidenceLedger, report: Report) -> ChartDrawn:
        entry = ledger.entries.get(args.evidence_id)
        if entry is None or entry.kind != EvidenceKind.AGGREGATE or not entry.record.rows:
            raise ToolError("UNKNOWN_EVIDENCE", f"{args.evidence_id} is not a grouped query_orders result of this turn")
        title = args.title if check_report(args.title, [args.evidence_id], ledger, require_scope=False).ok \
            else _label(entry.record)
        report.chart = await asyncio.to_thread(draw_chart, entry.record, args.kind, title)
        return ChartDrawn(args.evidence_id, title)

    async def _ask_template(self, ask: Ask, report: Report, ledger: EvidenceLedger, started: float) -> Report:
        """The deterministic answer: each metric by its definition (db/metrics.py), the statuses and the period
        it counted stated first."""
        period = ask.period
        base = dict(start=period.start if period else None, end=period.end if period else None, region=ask.region,
                    category=ask.category)
        named = ask.statuses or None
        try:
            if ask.group_by is None:
                results = [await self._run(metric_query(m, named, **base), ledger, report.trace) for m in ask.metrics]
                scopes = list(dict.fromkeys(counted(r) for r in results))
                lines = [f"{scopes[0]}，{_when(period)}{_where(ask)}：" if len(scopes) == 1 else
                         f"{_when(period)}{_where(ask)}："]
                for r in results:
                    none = "" if r.orders else "（没有符合条件的订单）"
                    each = f"，{counted(r)}" if len(scopes) > 1 else ""
                    lines.append(f"{_label(r)}：{_figure(r.query.metric, r.whole)}{none}{each}")
                self._release("\n".join(lines), [r.evidence_id for r in results], ledger, report)
            else:
                metric = ask.metrics[0]
                result = await self._run(metric_query(metric, named, group_by=ask.group_by, top_n=ask.top_n, **base),
                                         ledger, report.trace)
                measure, label = result.query.metric, _label(result)
                head = f"{counted(result)}，{_when(period)}{_where(ask)}"
                lines = [f"{head}，按{_GROUP_LABEL[ask.group_by]}的{label}："]
                for row in result.rows:
                    share = f"，占{row.share}%" if row.share is not None else ""
                    count = f"（{row.orders}单{share}）" if measure is not Metric.COUNT else (f"（占{row.share}%）"
                                                                                          if row.share else "")
                    lines.append(f"{row.key}：{_figure(measure, row.value)}{count}")
                if not result.rows:
                    lines = [f"{head}：没有符合条件的订单。"]
                self._release("\n".join(lines), [result.evidence_id], ledger, report)
                if report.helped and ask.chart is not None and result.rows:
                    title = f"{period.phrase if period and period.phrase else _when(period)}{_where(ask)}" \
                            f"按{_GROUP_LABEL[ask.group_by]}的{label}"
                    report.chart = await asyncio.to_thread(draw_chart, result, ask.chart, title)
                    report.caption = self._caption(report, ledger)
        except AggregateError as exc:   # the reason in the operator's words (the English stays in the log)
            log.warning("an /ask aggregate failed: %s", exc)
            report.answer, report.status = _refusal(exc), INSUFFICIENT
        return self._finish(report, ledger, started)

    async def for_customer(self, text: str, user_id: str, names_goods: bool = False) -> Report | None:
        """A customer's question about their own spending or number of orders (scoped to `user_id`, taken
        from the update), a refusal of a question about the shop's business, or None for anything else.
        `names_goods`: the message names goods of the catalog (我之前买那俩足球花了多少钱): what one order of them cost,
        not a sum of spending — None."""
        own = _OWN.search(text) and _OWN_FIGURES.search(text) and not _ONE_ORDER.search(text) \
            and not (names_goods and "买" in text)   # (goods named as bought: …买那俩足球花了多少)
        if own and _COUNT_ONLY.search(text) and not _MONEY.search(text):
            return None   # (the turn lists their orders)
        if not own:
            if _SHOP_FIGURES.search(text):
                report = Report(SHOP_DATA_REFUSAL, INSUFFICIENT)
                report.trace.status = INSUFFICIENT
                return report
            return None
        started = time.perf_counter()
        report = Report("", INSUFFICIENT)
        period = await asyncio.to_thread(resolve, text, self.today())
        ledger = EvidenceLedger()
        # the shop's own definitions: what a customer spent is 销售额 over their paid orders
        base = dict(start=period.start if period else None, end=period.end if period else None, user_id=user_id)
        count = await self._run(metric_query(MetricKey.ORDERS, **base), ledger, report.trace)
        total = await self._run(metric_query(MetricKey.SALES, **base), ledger, report.trace)
        when = f"{period.phrase}（{period}）" if period else "至今"
        if count.orders == 0:
            answer = f"您{when}在本店没有已付款的订单。"
        else:
            answer = (f"您{when}在本店共有{count.whole}笔已付款订单，实付合计{yuan(total.whole)}"
                      "（不含待付款、已取消和已退款的订单）。")
        self._release(answer, [count.evidence_id, total.evidence_id], ledger, report)
        report.trace.status, report.trace.citations = report.status, report.citations
        report.trace.file_ledger(ledger)
        report.trace.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        return report


_GROUP_LABEL = {Dimension.DAY: "天", Dimension.WEEK: "周（每周一起）", Dimension.MONTH: "月", Dimension.REGION: "地区",
                Dimension.CATEGORY: "品类", Dimension.PRODUCT: "商品", Dimension.STATUS: "订单状态"}
