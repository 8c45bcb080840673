"""`python bot.py ask "…"` and `python bot.py stats [--day D]`: the operators' /ask and /stats without
Telegram. `ask` runs the same Analyst as /ask (the configured chat model with the operator tools and the
report checker, or the deterministic reading when no model is configured) over the catalog, read-only;
a chart is written to a PNG file whose path is printed. `stats` prints /stats for one Asia/Shanghai day
from the audit store.

Importing this module stays cheap: each command imports what it runs when it runs."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
from datetime import date, datetime, timedelta
from pathlib import Path

from agent.settings import Settings, StartupError, audit_db_for


async def ask(settings: Settings, question: str):
    """The operator's Report for `question`: what /ask would send."""
    from agent.analytics.analyst import Analyst
    from agent.startup import chat_model_from, ensure_catalog
    from db.aggregates import OrderAnalytics
    from db.connection import CatalogUnavailable, open_readonly

    ensure_catalog(settings)
    try:
        conn = await open_readonly(settings.database_path)
    except CatalogUnavailable as exc:
        raise StartupError(f"DATABASE_PATH: {exc}") from None
    model = chat_model_from(settings)
    try:
        analyst = Analyst(OrderAnalytics(conn), lambda: settings.today, model,
                          budget_seconds=settings.turn_budget_seconds)
        return await analyst.ask(question)
    finally:
        if model is not None:
            await model.close()
        await conn.close()


def save_chart(chart: bytes, question: str, chart_dir: Path) -> Path:
    """The chart as a PNG file named after the question (the same question overwrites its own chart)."""
    chart_dir.mkdir(parents=True, exist_ok=True)
    path = chart_dir / f"ask-{hashlib.sha1(question.encode()).hexdigest()[:10]}.png"
    path.write_bytes(chart)
    return path.resolve()


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    question = " ".join(args.question).strip()
    if not question:
        raise StartupError("ask: 请写出问题，例如 python bot.py ask \"上个月已签收的订单一共多少单\"")
    report = asyncio.run(ask(settings, question))
    print(report.answer)
    if report.chart is not None:
        print(f"图表已保存：{save_chart(report.chart, question, Path(args.chart_dir))}")
    return 0 if report.helped else 1


def day_of(text: str | None, today: date) -> date:
    if not text:
        return today
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise StartupError(f"--day: expected YYYY-MM-DD, got {text!r}") from None


def stats_text(records, day: date) -> str:
    """/stats for `day` (its records already read)."""
    from agent.analytics.stats import compute, format_stats

    return format_stats(compute(records), f"{day.isoformat()}（北京时间）")


def day_bounds(day: date) -> tuple[datetime, datetime]:
    from agent.clock import SHANGHAI

    start = datetime(day.year, day.month, day.day, tzinfo=SHANGHAI)
    return start, start + timedelta(days=1)


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    from agent.clock import today_shanghai
    from agent.startup import open_audit_reader
    from db.audit_store import AuditFilter

    day = day_of(args.day, today_shanghai())
    reader = open_audit_reader(audit_db_for(args.db, settings), "--db" if args.db else "AUDIT_DB")
    if reader is None:
        print(stats_text([], day))
        return 0
    try:
        since, until = day_bounds(day)
        print(stats_text(list(reader.iterate(AuditFilter(since=since, until=until))), day))
    finally:
        reader.close()
    return 0


def add_analytics_commands(sub: argparse._SubParsersAction) -> None:
    ask_parser = sub.add_parser("ask", help="the operators' /ask without Telegram: a question about the shop's orders")
    ask_parser.add_argument("question", nargs="+", help="e.g. 上个月已签收的订单一共多少单")
    ask_parser.add_argument("--chart-dir", default=".", help="where a chart is saved as PNG (default: here)")
    ask_parser.set_defaults(func=cmd_ask)
    stats = sub.add_parser("stats", help="the operators' /stats for one day (Asia/Shanghai) from the audit store")
    stats.add_argument("--day", help="YYYY-MM-DD (default: today, Asia/Shanghai)")
    stats.add_argument("--db", help="audit store (default: AUDIT_DB)")
    stats.set_defaults(func=cmd_stats)
