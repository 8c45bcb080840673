"""What operators read is Chinese: every reason code a validator or the tool loop can give has a one-line
explanation (the code kept beside it), statuses and kinds have labels, /stats has no English sentence, an
/ask that cannot run says why in Chinese, and evidence figures read as people write them (09:00, 48小时,
3个月, ¥699.00) — from the shop's real policy documents through a real ledger and trace."""

from __future__ import annotations

import ast
import re
from decimal import Decimal
from pathlib import Path

from agent.analytics.analyst import Analyst
from agent.analytics.labels import REASONS, STATUS_LABELS, figure_value, reason, status_label
from agent.analytics.stats import Stats, format_stats
from agent.tools import file_evidence
from agent.trace import TurnTrace
from db.aggregates import OrderAnalytics
from db.knowledge import documents_by_id
from guardrails.ledger import EvidenceLedger
from tests.fakes.demo import DEMO_DAY

ROOT = Path(__file__).resolve().parent.parent


def _codes_in(*folders: str) -> set[str]:
    """Every reason code the code can produce: NAME = "NAME" constants, and ToolError("CODE", …) calls."""
    codes: set[str] = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                        isinstance(node.value.value, str) and re.fullmatch("[A-Z][A-Z_]{4,}", node.value.value) and \
                        any(isinstance(t, ast.Name) and t.id == node.value.value for t in node.targets):
                    codes.add(node.value.value)
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("ToolError", "Problem") and \
                        node.args and isinstance(node.args[0], ast.Constant):
                    codes.add(node.args[0].value)
    return codes


def test_every_reason_code_has_a_chinese_explanation():
    codes = _codes_in("guardrails", "agent") - {"WARNING"}
    assert {"WRONG_ROLE", "UNVERIFIED_AMOUNT", "SCOPE_UNSTATED", "PERIOD_MISMATCH"} <= codes
    assert codes <= set(REASONS), sorted(codes - set(REASONS))
    assert reason("WRONG_ROLE").endswith("（WRONG_ROLE）") and re.match("[\u4e00-\u9fff]", reason("WRONG_ROLE"))
    assert {status_label(s) for s in ("grounded", "insufficient_evidence", "fallback")} == {"已核实", "证据不足", "兜底回复"}
    assert all(re.fullmatch("[\u4e00-\u9fff]+", label) for label in STATUS_LABELS.values())


def test_stats_has_no_english_sentence():
    stats = Stats(turns=10, grounded=8, insufficient=1, fallback=1, degraded=1, blocked_by_code={"WRONG_ROLE": 2},
                  misunderstood=3, flags={"rephrased": 2, "thumbs_down": 1}, handoffs=1, thumbs_down=1,
                  latency_p50_ms=800, latency_p95_ms=2000, model_calls_per_turn=2.0)
    text = format_stats(stats, "今天（2026-11-29，北京时间）")
    assert "已核实 8（80%）" in text and "疑似没听懂：3（30%）" in text and "数字是真的" in text
    words = re.findall("[A-Za-z]{3,}", re.sub("（[A-Z_]+）", "", text))
    assert words == [], words


async def test_an_ask_that_cannot_run_says_why_in_chinese(conn):
    report = await Analyst(OrderAnalytics(conn), lambda: DEMO_DAY).ask("双十一卖得最好的前99个商品")
    assert report.status == "insufficient_evidence" and "排行最多前50名" in report.answer
    assert not re.search("[A-Za-z]{3,}", report.answer)


async def test_evidence_figures_read_as_people_write_them(conn):
    ledger = EvidenceLedger()
    file_evidence(ledger, await documents_by_id(conn, ["service#1", "shipping#1", "warranty#1"]))
    trace = TurnTrace(model="offline")
    trace.file_ledger(ledger)
    shown = " ".join(f for figures in trace.evidence_figures.values() for f in figures)
    assert "09:00" in shown and "21:00" in shown and "540" not in shown and "1260" not in shown
    assert "48小时" in shown and "3个月" in shown
    assert figure_value("price", "money", Decimal("699")) == "¥699.00"
    assert figure_value("rate", "discount", Decimal("0.9")) == "9折"
    assert figure_value("text", "duration", Decimal("168")) == "7天"
