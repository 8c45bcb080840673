"""`python bot.py ask "…"` and `python bot.py stats [--day D]`: /ask and /stats without Telegram, run in-process
through bot.main (the same parser and command functions as the real process), and once as a real process."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

import bot
from agent.audit import AuditLog
from agent.clock import SHANGHAI
from agent.trace import TurnResult, TurnTrace
from db.audit_store import AuditReader, AuditStore
from tests.fakes.demo import DEMO_DAY

BOT = Path(__file__).resolve().parent.parent / "bot.py"


@pytest.fixture
def offline(monkeypatch, tmp_path, demo_db):
    """The demo catalog, no chat model (the offline reading), no .env of the developer's."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "BOT_TOKEN", "AUDIT_DB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_PATH", str(demo_db))
    monkeypatch.setenv("KEFU_TODAY", DEMO_DAY.isoformat())
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _signed_october(db: Path) -> tuple[int, Decimal]:
    with sqlite3.connect(db) as shop:
        totals = [Decimal(t) for (t,) in shop.execute(
            "SELECT total FROM orders WHERE status = '已签收' AND created_at >= '2026-10-01' "
            "AND created_at < '2026-11-01'")]
    return len(totals), sum(totals, Decimal(0))


def test_ask_answers_like_the_operators_command(offline, demo_db, capsys):
    assert bot.main(["ask", "上个月已签收的订单一共多少单"]) == 0
    out = capsys.readouterr().out
    count, _ = _signed_october(demo_db)
    assert "按已签收订单统计" in out and "2026-10-01 至 2026-10-31" in out and f"订单数：{count}单" in out
    assert "图表" not in out


def test_ask_saves_its_chart_and_prints_the_path(offline, capsys):
    assert bot.main(["ask", "最近7天各地区销售额，做成饼图", "--chart-dir", "charts"]) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith("图表已保存：")]
    path = Path(line.removeprefix("图表已保存："))
    assert path.parent == offline / "charts" and path.read_bytes().startswith(b"\x89PNG")


def test_stats_prints_a_day_of_the_audit_in_chinese(offline, capsys):
    audit = AuditLog(AuditStore(offline / "audit.db"))
    trace = TurnTrace(model="offline", model_calls=1, status="grounded")
    for n in range(3):
        audit.record(chat_id=str(n), user_id="u", message="足球多少钱", result=TurnResult("足球120元。", "grounded", [],
                                                                                       trace=trace))
    audit.close()
    reader = AuditReader(offline / "audit.db")
    (day,) = {datetime.fromisoformat(r["time"]).astimezone(SHANGHAI).date() for r in reader.query()}
    reader.close()
    capsys.readouterr()
    assert bot.main(["stats", "--day", day.isoformat(), "--db", str(offline / "audit.db")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"📊 客服统计：{day.isoformat()}") and "对话轮次：3" in out and "已核实 3（100%）" in out
    capsys.readouterr()
    assert bot.main(["stats", "--day", "2000-01-01", "--db", str(offline / "audit.db")]) == 0
    assert "对话轮次：0" in capsys.readouterr().out
    assert bot.main(["stats", "--day", "yesterday"]) == 2


def test_the_command_module_is_cheap_to_import():
    code = ("import sys, agent.analytics.commands; "
            "print(sorted(m for m in ('matplotlib', 'aiosqlite', 'openai', 'jionlp', 'agent.analytics.analyst') "
            "if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=BOT.parent, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


@pytest.mark.slow   # a real bot.py process
def test_bot_ask_as_a_real_process(tmp_path, demo_db):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "BOT_TOKEN", "AUDIT_DB")}
    run = subprocess.run([sys.executable, str(BOT), "ask", "上个月已签收的订单一共多少单，多少钱"], capture_output=True,
                         cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL,
                         env={**env, "DATABASE_PATH": str(demo_db), "KEFU_TODAY": DEMO_DAY.isoformat()})
    assert run.returncode == 0, run.stderr.decode()
    count, total = _signed_october(demo_db)
    out = run.stdout.decode("utf-8")
    assert f"订单数：{count}单" in out and f"销售额：{total}元" in out
