"""The audit log: records of turns and events in the store (and the optional JSON Lines copy), read back."""

import json

import pytest

from agent.audit import AuditLog, summary_line, tail
from agent.trace import TurnTrace, VerdictTrace
from agent.turn import TurnResult


def result(answer="足球售价120元", blocked=False):
    trace = TurnTrace(model="offline", model_calls=2, verdicts=[VerdictTrace(not blocked, ["UNVERIFIED_AMOUNT"]
                                                                              if blocked else [], "m")])
    return TurnResult(answer, "grounded", ["product:001"], ["001"], 1, trace)


def test_records_are_written_and_filtered(tmp_path):
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(jsonl=path)
    audit.record(chat_id="1", user_id="u1", message="足球多少钱", result=result())
    audit.record(chat_id="2", user_id="u2", message="足球多少钱", result=result(blocked=True), update_id=5)
    audit.close()
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert [r["chat_id"] for r in lines] == ["1", "2"] and lines[1]["blocked"] and lines[1]["update_id"] == 5
    assert [r["chat_id"] for r in tail(path, chat="2")] == ["2"]
    assert [r["chat_id"] for r in tail(path, blocked=True)] == ["2"]
    assert "UNVERIFIED_AMOUNT" in summary_line(lines[1]) and "有拦截" in summary_line(lines[1])
    assert "金额不在已核实的数据中（UNVERIFIED_AMOUNT）" in summary_line(lines[1]) and "已核实（grounded）" in summary_line(lines[1])


def test_rotation_keeps_writing(tmp_path):
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(jsonl=path, jsonl_max_bytes=2000, jsonl_backups=2)
    for i in range(30):
        audit.record(chat_id=str(i), user_id="u", message="问" * 20, result=result())
    audit.close()
    assert (tmp_path / "audit.jsonl.1").exists() and tail(path, count=1)[0]["chat_id"] == "29"


# --- the audit store (SQLite, WAL) ---------------------------------------------------------------------

def test_the_store_keeps_turns_and_events_queryable(audit_target):
    import sqlite3
    from datetime import UTC, datetime, timedelta

    from db.audit_store import AuditFilter, DatabaseUrl, open_store

    store = open_store(audit_target)
    audit = AuditLog(store)
    audit.record(chat_id="1", user_id="u1", message="足球多少钱", result=result())
    audit.record(chat_id="2", user_id="u2", message="<script>篮球</script>", result=result(blocked=True), update_id=5)
    audit.event("relay", "2", direction="to_operators", text="在吗")
    store.flush()
    if not isinstance(audit_target, DatabaseUrl):
        assert sqlite3.connect(audit_target).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [r["kind"] for r in store.query()] == ["relay", "turn", "turn"]          # newest first, with row ids
    assert [r["chat_id"] for r in store.query(AuditFilter(code="UNVERIFIED_AMOUNT"))] == ["2"]
    assert [r["chat_id"] for r in store.query(AuditFilter(blocked_only=True))] == ["2"]
    assert [r["message"] for r in store.query(AuditFilter(text="篮球"))] == ["<script>篮球</script>"]
    assert [r["kind"] for r in store.query(AuditFilter(chat_id="2"), newest_first=False)] == ["turn", "relay"]
    assert store.count() == 3 and store.count(AuditFilter(kind="turn", user_id="u2")) == 1
    assert store.get(store.latest_id())["kind"] == "relay" and store.get(store.latest_id() + 1) is None
    assert [r.chat_id for r in audit.of_chat("1", 5)] == ["1"]                     # typed records
    assert len(audit.since(datetime.now(UTC) - timedelta(minutes=1))) == 3
    assert store.purge(now=datetime.now(UTC) + timedelta(days=91)) == 3 and store.query() == []
    audit.close()


def test_a_full_queue_is_counted_and_nothing_else_is_lost(tmp_path, caplog):
    import sqlite3
    import time

    from agent.audit_record import TurnRecord
    from db.audit_store import AuditStore

    store = AuditStore(tmp_path / "audit.db", queue_size=1)
    blocker = sqlite3.connect(tmp_path / "audit.db", timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")                       # a disk that does not answer
    store.add(TurnRecord(time="t1", chat_id="1").entry())
    while store._queue.qsize():                              # the writer has taken it and waits on the disk
        time.sleep(0.01)
    assert store.add(TurnRecord(time="t2", chat_id="1").entry())         # queued
    assert not store.add(TurnRecord(time="t3", chat_id="1").entry())     # full: counted and logged
    assert store.dropped == 1 and "1 record(s) dropped so far" in caplog.text
    blocker.rollback()
    blocker.close()
    store.flush()
    assert [r["time"] for r in store.query(newest_first=False)] == ["t1", "t2"]
    store.close()


def test_audit_export_and_tail_on_the_command_line(tmp_path):
    import csv
    import io
    import subprocess
    import sys
    from pathlib import Path

    from db.audit_store import AuditStore

    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    audit.record(chat_id="1", user_id="u1", message="=足球多少钱", result=result())
    audit.event("feedback", "1", update_id=9, value="up")
    audit.close()
    bot = Path(__file__).resolve().parent.parent / "bot.py"

    def run(*args):
        return subprocess.run([sys.executable, str(bot), "audit", *args, "--db", str(tmp_path / "audit.db")],
                              capture_output=True, cwd=tmp_path, timeout=60)

    exported = run("export", "--since", "2020-01-01", "--format", "csv")
    assert exported.returncode == 0 and exported.stdout.startswith("\ufeff".encode())
    rows = list(csv.DictReader(io.StringIO(exported.stdout.decode("utf-8-sig"))))
    assert [r["kind"] for r in rows] == ["turn", "feedback"] and rows[0]["message"] == "'=足球多少钱"
    assert b"2 audit records exported" in exported.stderr
    lines = run("export", "--format", "jsonl").stdout.decode().splitlines()
    assert len(lines) == 2 and '"value": "up"' in lines[1]
    assert rows[0]["time"].endswith("+08:00") and json.loads(lines[0])["time"].endswith("+08:00")   # Asia/Shanghai
    assert run("export", "--since", "yesterday").stderr.decode().strip() == \
        "kefu-bot: --since: expected YYYY-MM-DD or an ISO 8601 time, got 'yesterday'"
    tail = run("tail", "--chat", "1").stdout.decode()
    assert "=足球多少钱" in tail and "feedback" in tail and tail.index("问：=足球") < tail.index("feedback")
    assert tail.split(" ", 1)[0].endswith("+08:00")


def test_two_writers_share_one_store(audit_target):
    """Two bot processes: two stores (two connections, two writer threads) on one WAL file, or one database."""
    from agent.audit_record import TurnRecord
    from db.audit_store import open_store

    first, second = open_store(audit_target), open_store(audit_target)
    for n in range(300):
        (first if n % 2 else second).add(TurnRecord(time=f"2026-11-29T00:00:{n:05d}", kind="turn",
                                                    chat_id=str(n)).entry())
    first.flush()
    second.flush()
    assert sorted(int(r["chat_id"]) for r in first.iterate()) == list(range(300))
    assert first.dropped == second.dropped == 0
    first.close()
    second.close()


def test_the_daily_counts_by_sql_agree_with_the_stats_over_records(audit_target):
    from datetime import UTC, datetime, timedelta

    from agent.analytics.stats import combine, compute, from_counts
    from db.audit_store import AuditFilter, open_store

    store = open_store(audit_target)
    audit = AuditLog(store)
    for n in range(12):
        r = result(answer=f"回答{n}", blocked=n % 4 == 0)
        r.status = ["grounded", "insufficient_evidence", "grounded"][n % 3]
        r.trace.latency_ms, r.trace.degraded = 100.0 + n, n % 5 == 0
        audit.record(chat_id=str(n % 3), user_id="u", message="q", result=r, update_id=n, delivered=n != 7)
    for kind, extra in [("handoff_start", {}), ("relay", {}), ("feedback", {"value": "up"}),
                        ("feedback", {"value": "down"}), ("feedback", {"value": "up"})]:
        audit.event(kind, "1", **extra)
    store.flush()
    since = datetime.now(UTC) - timedelta(days=1)
    by_sql = from_counts(combine(store.daily(since)))
    by_records = compute(list(store.iterate(AuditFilter(since=since))))
    assert by_sql == by_records and by_sql.turns == 12 and by_sql.thumbs_up == 2 and by_sql.muted == 1
    audit.close()


@pytest.mark.slow   # runs bot.py commands (conftest: slow)
def test_audit_tail_follows_new_records_in_the_store(tmp_path):
    import queue
    import subprocess
    import sys
    import threading
    import time
    from pathlib import Path

    from db.audit_store import AuditStore

    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    audit.record(chat_id="1", user_id="u", message="旧问题", result=result())
    store.flush()
    bot = Path(__file__).resolve().parent.parent / "bot.py"
    follower = subprocess.Popen([sys.executable, str(bot), "audit", "tail", "-f", "-n", "5", "--db",
                                 str(tmp_path / "audit.db")], stdout=subprocess.PIPE, cwd=tmp_path, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in follower.stdout], daemon=True).start()

    def read_until(text: str) -> str:
        seen, deadline = "", time.monotonic() + 20
        while text not in seen and time.monotonic() < deadline:
            try:
                seen += lines.get(timeout=0.5)
            except queue.Empty:
                continue
        return seen

    try:
        assert "旧问题" in read_until("旧问题")                 # the latest records first
        audit.record(chat_id="2", user_id="u", message="新问题", result=result())
        store.flush()
        seen = read_until("新问题")
        assert "新问题" in seen and "会话=2" in seen
    finally:
        follower.terminate()
        follower.wait(10)
        audit.close()


# --- the typed record -------------------------------------------------------------------------------------

def test_a_turn_record_round_trips_row_record_csv(audit_target):
    import csv
    import io

    from agent.analytics.stats import CSV_COLUMNS, to_csv
    from agent.audit_record import TurnRecord
    from agent.trace import ToolTrace
    from db.audit_store import open_store

    store = open_store(audit_target)
    audit = AuditLog(store)
    turn = result(answer="足球售价120元", blocked=True)
    turn.trace.tool_calls.append(ToolTrace("get_product_details", {"product_ids": ["001"]}, "verified", 1.5,
                                           ["product:001"]))
    turn.trace.evidence_ids, turn.trace.evidence_figures = ["product:001"], {"product:001": ["price 120"]}
    turn.trace.latency_ms, turn.trace.degraded = 12.5, True
    written = audit.record(chat_id="3", user_id="u3", message="=足球多少钱", result=turn, update_id=8)
    store.flush()
    (row,) = store.query()
    record = TurnRecord.from_row(row)
    assert record == TurnRecord.of(record) and record.id == row["id"]
    assert record.as_row() == {k: v for k, v in row.items() if k != "id"} == written.as_row()
    assert record.tool_calls[0].arguments == {"product_ids": ["001"]}
    assert record.evidence_figures["product:001"] == ("price 120",)
    assert record.blocked_codes == ("UNVERIFIED_AMOUNT",) and record.marks == ("degraded", "blocked")
    assert record.flagged and not record.muted and record.outcome == "grounded"
    (line,) = csv.DictReader(io.StringIO(to_csv([record]).decode("utf-8-sig")))
    assert list(line) == list(CSV_COLUMNS) and to_csv([record]) == to_csv([row])
    assert line["message"] == "'=足球多少钱" and line["reason_codes"] == "UNVERIFIED_AMOUNT"
    assert (line["kind"], line["update_id"], line["blocked"], line["degraded"], line["latency_ms"]) == \
        ("turn", "8", "True", "True", "12.5")
    assert line["citations"] == '["product:001"]' and line["text"] == line["value"] == ""
    audit.close()


def test_a_record_from_an_old_row_reads_with_the_missing_fields_empty(tmp_path):
    """Rows written before kinds, delivery, drafts and evidence figures existed (an existing audit file)."""
    import sqlite3

    from agent.analytics.stats import compute, to_csv
    from agent.audit_record import TurnRecord
    from db.audit_store import AuditReader, AuditStore

    old = {"time": "2026-01-02T03:04:05.000+00:00", "chat_id": "9", "status": "fallback", "fallback": True,
           "latency_ms": 200, "model_calls": 1, "message": "在吗", "answer": "抱歉",
           "verdicts": [{"ok": False, "codes": ["WRONG_ROLE"]}, {"ok": True, "codes": []}], "shipped_by": "v1"}
    AuditStore(tmp_path / "audit.db", retention_days=3650).close()          # the schema
    with sqlite3.connect(tmp_path / "audit.db") as conn:
        conn.execute("INSERT INTO audit (time, kind, chat_id, status, fallback, record) VALUES (?, 'turn', ?, ?, 1, ?)",
                     (old["time"], "9", "fallback", json.dumps(old, ensure_ascii=False)))
    reader = AuditReader(tmp_path / "audit.db")
    (row,) = reader.query()
    reader.close()
    record = TurnRecord.from_row(row)
    assert record.is_turn and record.kind == "turn" and record.delivered is None and not record.muted
    assert record.verdicts[0].codes == ("WRONG_ROLE",) and record.verdicts[0].draft == ""
    assert record.blocked_codes == ("WRONG_ROLE",) and record.outcome == "fallback" and record.latency_ms == 200
    assert record.tool_calls == () and record.evidence_figures == {} and record.extra == {"shipped_by": "v1"}
    assert record.marks == ("fallback", "blocked") and record.as_row()["shipped_by"] == "v1"
    stats = compute([row])
    assert (stats.turns, stats.fallback, stats.latency_p95_ms, stats.blocked_by_code) == (1, 1, 200, {"WRONG_ROLE": 1})
    line = to_csv([row]).decode("utf-8-sig").splitlines()[1]
    assert line.startswith("2026-01-02T11:04:05.000+08:00,turn,9,,,fallback,在吗,抱歉,,,,WRONG_ROLE,,True,1,200,")
    assert summary_line(row).startswith("2026-01-02T11:04:05.000+08:00 会话=9 兜底回复（fallback）")
    assert "兜底" in summary_line(row) and "（WRONG_ROLE）" in summary_line(row) and "问：在吗" in summary_line(record)


def test_an_event_record_keeps_what_it_says():
    from agent.audit_record import TurnRecord

    row = {"time": "t", "kind": "relay", "chat_id": "2", "direction": "to_customer", "operator_id": 7,
           "delivered": False, "text": "您好", "id": 4}
    record = TurnRecord.from_row(row)
    assert not record.is_turn and record.status is None and record.blocked_codes == () and record.muted
    assert record.as_row() == {k: v for k, v in row.items() if k != "id"}
    assert summary_line(record) == "t 会话=2 转发（relay） operator_id=7 direction=to_customer delivered=False id=4\n  您好"


def test_the_percentile_is_the_inclusive_quantile():
    import random
    import statistics

    from agent.analytics.stats import percentile

    rng = random.Random(5)
    for n in (1, 2, 3, 5, 20, 101):
        values = [rng.uniform(10, 5000) for _ in range(n)]
        p95 = values[0] if n == 1 else statistics.quantiles(values, n=20, method="inclusive")[18]
        assert percentile(values, 95) == pytest.approx(p95, rel=1e-12)
        assert percentile(values, 50) == pytest.approx(statistics.median(values), rel=1e-12)
    assert percentile([100.0, 100.0, 100.0, 200.0, 300.0], 95) == 280.0 and percentile([], 50) is None


# --- the readers of the typed record: the store's entry, /chat, odd rows -----------------------------------

def test_the_store_writes_the_entry_the_record_gives():
    from agent.audit_record import TurnRecord

    turn = result(blocked=True)
    turn.trace.latency_ms, turn.trace.fallback = 30.0, True
    record = TurnRecord.from_turn(chat_id="4", user_id="u4", message="足球多少钱", result=turn, update_id=6)
    entry = record.entry()
    assert (entry.time, entry.kind, entry.chat_id, entry.user_id, entry.update_id, entry.status) == \
        (record.time, "turn", "4", "u4", 6, "grounded")
    assert (entry.blocked, entry.degraded, entry.fallback, entry.latency_ms, entry.model_calls) == \
        (True, False, True, 30.0, 2)
    assert entry.codes == ("UNVERIFIED_AMOUNT",) and entry.record == record.as_row()
    assert (entry.message, entry.answer) == ("足球多少钱", "足球售价120元")
    event = TurnRecord.from_event("relay", 2, direction="to_customer", operator_id=7, delivered=False, text="您好",
                                  shift="night")
    assert event.kind == "relay" and event.chat_id == "2" and event.extra == {"shift": "night"}
    assert event.entry().record == {"time": event.time, "kind": "relay", "chat_id": "2", "operator_id": 7,
                                    "direction": "to_customer", "delivered": False, "text": "您好", "shift": "night"}
    assert not event.entry().blocked and event.entry().status is None and event.entry().codes == ()


def test_events_are_typed_when_written_and_read_back_alike(tmp_path):
    from db.audit_store import AuditStore

    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store, jsonl=tmp_path / "audit.jsonl")
    written = audit.event("feedback", "3", update_id=9, value="down", user_id="u3")
    store.flush()
    audit.close()
    (line,) = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    (row,) = AuditLog(jsonl=tmp_path / "audit.jsonl").of_chat("3", 5)
    assert line == written.as_row() and row == written and (row.kind, row.value, row.update_id) == ("feedback", "down", 9)


def test_chat_renders_typed_records():
    from agent.audit_record import TurnRecord, Verdict
    from handlers.operators import format_chat

    records = [
        TurnRecord(time="2026-11-30T02:03:04.567+00:00", chat_id="51", message="足球多少钱", answer="足球售价120元",
                   status="grounded", degraded=True, delivered=False, blocked=True,
                   verdicts=(Verdict(False, ("WRONG_ROLE", "UNVERIFIED_AMOUNT")), Verdict(True))),
        TurnRecord.from_row({"time": "2026-11-30T02:05:00+00:00", "chat_id": "51", "status": "fallback",
                             "fallback": True, "message": "在吗", "answer": "抱歉"}),    # an old row: no kind
        TurnRecord.from_event("feedback", "51", time="2026-11-30T02:06:00.000+00:00", update_id=3, value="up"),
        TurnRecord.from_event("relay", "51", time="2026-11-30T02:07:00.000+00:00", direction="to_operators",
                              text="这个颜色有吗"),
        TurnRecord.from_event("handoff_start", "51", time="2026-11-30T02:08:00.000+00:00", user_id="51"),
    ]
    assert format_chat("51", records) == "\n".join([
        "💬 会话 51：最近 5 条记录",
        "\n2026-11-30 10:03:04 · 已核实 · 拦截：金额不在已核实的数据中（UNVERIFIED_AMOUNT）；"
        "数字是真的，但用错了含义（如把下单额说成销售额、把均价说成总额）（WRONG_ROLE） · 降级、未发送",
        "问：足球多少钱", "答：足球售价120元",
        "\n2026-11-30 10:05:00 · 兜底回复 · 兜底", "问：在吗", "答：抱歉",
        "\n2026-11-30 10:06:00 · 反馈（feedback） 👍",
        "\n2026-11-30 10:07:00 · 转发（relay） to_operators\n  这个颜色有吗",
        "\n2026-11-30 10:08:00 · 转人工（handoff_start）"])


def test_odd_rows_are_read_by_the_store_and_every_reader_without_crashing(tmp_path):
    """Rows a damaged file, an older writer or another tool left: a field of the wrong type, a verdict that
    is not an object, a document that is not a JSON object."""
    import sqlite3
    from datetime import UTC, datetime, timedelta

    from agent.analytics.stats import compute, from_counts, to_csv
    from db.audit_store import AuditFilter, AuditReader, AuditStore
    from handlers.operators import format_chat

    now = datetime.now(UTC)
    at = [(now - timedelta(minutes=5 - n)).isoformat(timespec="milliseconds") for n in range(4)]
    odd = {"time": at[0], "kind": "turn", "chat_id": 8, "status": 5, "latency_ms": "slow", "model_calls": "two",
           "update_id": "x", "delivered": None, "verdicts": ["WRONG_ROLE", {"ok": False, "codes": 5},
                                                            {"ok": False, "codes": ["MISSING_CONDITION", {"a": 1}]}],
           "tool_calls": [{"name": "get_promotions", "evidence_ids": "promotion:P001"}, "search"],
           "evidence_figures": ["price 120"], "citations": "product:001", "message": None}
    AuditStore(tmp_path / "audit.db").close()
    with sqlite3.connect(tmp_path / "audit.db") as conn:
        insert = ("INSERT INTO audit (time, kind, chat_id, status, latency_ms, model_calls, record) "
                  "VALUES (?, 'turn', '8', ?, ?, ?, ?)")
        conn.execute(insert, (at[0], "5", "slow", "two", json.dumps(odd, ensure_ascii=False)))
        conn.execute(insert, (at[1], "grounded", 40.0, 2, json.dumps({"time": at[1], "chat_id": "8",
                                                                      "status": "grounded", "latency_ms": 40.0})))
        conn.execute(insert, (at[2], "grounded", None, None, "[1, 2]"))                  # not an object
        conn.execute(insert, (at[3], "grounded", None, None, "{not json"))               # not JSON
    reader = AuditReader(tmp_path / "audit.db")
    rows = reader.query(AuditFilter(chat_id="8"), newest_first=False)
    assert [r["id"] for r in rows] == [1, 2, 3, 4] and rows[2] == {"id": 3} and rows[3] == {"id": 4}
    assert reader.get(4) == {"id": 4} and len(list(reader.iterate())) == 4
    (day,) = reader.daily(now - timedelta(days=1))
    assert day["turns"] == 4 and day["latencies"] == [40.0] and day["model_calls"] == [2]
    reader.close()

    first = TurnRecord_of(rows[0])
    assert (first.chat_id, first.status, first.latency_ms, first.model_calls, first.update_id) == \
        ("8", "5", None, None, None)
    assert first.blocked_codes == ("MISSING_CONDITION", "{'a': 1}") and first.citations == ()
    assert first.tool_calls[0].evidence_ids == () and first.evidence_figures == {} and not first.muted
    stats = compute(rows)
    assert stats.turns == 4 and stats.latency_p50_ms == 40.0 and from_counts(day).latency_p50_ms == 40.0
    assert to_csv(rows).decode("utf-8-sig").count("\r\n") == 5
    assert "· 5 · 拦截：优惠的前提条件没有说明（MISSING_CONDITION）" in format_chat("8", [TurnRecord_of(r) for r in rows])
    assert all(summary_line(r) for r in rows)


def TurnRecord_of(row):  # noqa: N802 - read as the type it builds
    from agent.audit_record import TurnRecord

    return TurnRecord.from_row(row)


# --- nothing stops the audit trail (issue 22) ----------------------------------------------------------

def _written(path, timeout: float = 10.0) -> list[dict]:
    """The rows of the store at `path` once the writer has had `timeout` to write them (polls: a dead writer
    must fail the test, not hang it)."""
    import sqlite3
    import time

    deadline = time.monotonic() + timeout
    while True:
        conn = sqlite3.connect(path)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM audit ORDER BY id")]
        conn.close()
        if time.monotonic() > deadline or any(r["chat_id"] == "after" for r in rows):
            return rows
        time.sleep(0.05)


def test_a_huge_update_id_then_a_normal_turn_both_reach_the_store(tmp_path):
    from db.audit_store import AuditStore

    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    audit.event("feedback", "9", update_id=2 ** 63, value="up", user_id="9")   # a forged callback's number
    audit.record(chat_id="big", user_id="u", message="足球多少钱", result=result(), update_id=2 ** 64 + 5)
    audit.record(chat_id="after", user_id="u", message="篮球多少钱", result=result(), update_id=7)
    rows = _written(tmp_path / "audit.db")
    assert store._thread.is_alive()
    assert [r["chat_id"] for r in rows] == ["9", "big", "after"]
    assert [r["update_id"] for r in rows] == [None, None, 7]          # the column empty, the record keeps it
    assert json.loads(rows[1]["record"])["update_id"] == 2 ** 64 + 5
    store.close()


def test_a_record_that_raises_in_the_writer_is_skipped_and_later_ones_are_written(audit_target, caplog):
    from collections.abc import Mapping

    from db.audit_store import AuditEntry, open_store

    class Poison(Mapping):   # a record that cannot be turned into JSON: raises in the writer thread
        def __getitem__(self, key):
            raise RuntimeError("poison")

        def __iter__(self):
            raise RuntimeError("poison")

        def __len__(self):
            return 1

    store = open_store(audit_target, retention_days=3650)
    store.add(AuditEntry("2026-11-30T00:00:00.000+00:00", "turn", "before", {"a": 1}))
    store.add(AuditEntry("2026-11-30T00:00:00.000+00:00", "turn", "bad", Poison(), update_id=4242))
    store.add(AuditEntry("2026-11-30T00:00:00.000+00:00", "turn", "after", {"a": 2}))
    assert store.flush(timeout=10)
    rows = store.query(newest_first=False)
    assert [r["a"] for r in rows] == [1, 2] and store._thread.is_alive()   # "before" and "after"
    assert store.failed == 1
    assert any("skipped" in r.getMessage() and "update_id=4242" in r.getMessage() and "RuntimeError" in r.getMessage()
               for r in caplog.records)
    store.add(AuditEntry("2026-11-30T00:00:01.000+00:00", "turn", "later", {"a": 3}))
    assert store.flush(timeout=10) and store.query(limit=1)[0]["a"] == 3
    store.close()


def _stuck_store(tmp_path, monkeypatch, queue_size=5):
    """A store whose writer hangs on its first batch (a disk that never answers), its queue then filled."""
    import threading

    from db.audit_store import AuditEntry, AuditStore

    store = AuditStore(tmp_path / "audit.db", queue_size=queue_size)
    release, stuck = threading.Event(), threading.Event()

    def write(entries):
        stuck.set()
        release.wait(60)

    monkeypatch.setattr(store, "_write", write)
    entry = AuditEntry("2026-11-30T00:00:00.000+00:00", "turn", "1", {})
    store.add(entry)
    assert stuck.wait(5)
    while store.add(entry):
        pass
    return store, release


def test_close_returns_with_a_full_queue_and_a_stuck_writer(tmp_path, caplog, monkeypatch):
    import threading
    import time

    from db import audit_store

    monkeypatch.setattr(audit_store, "CLOSE_SECONDS", 1.0, raising=False)
    store, release = _stuck_store(tmp_path, monkeypatch)
    done = threading.Event()
    closer = threading.Thread(target=lambda: (store.close(), done.set()), daemon=True)
    started = time.monotonic()
    closer.start()
    try:
        assert done.wait(10), "close() blocked on a full queue and a stuck writer"
        assert time.monotonic() - started < 5
        assert any("dropped at close" in r.getMessage() for r in caplog.records)
    finally:
        release.set()


def test_a_stuck_writer_is_reported_until_the_store_is_closed(tmp_path, monkeypatch):
    import time

    from db import audit_store

    monkeypatch.setattr(audit_store, "STUCK_SECONDS", 0.2)
    store, release = _stuck_store(tmp_path, monkeypatch)
    try:
        time.sleep(0.3)
        (problem,) = audit_store.writer_problems()
        assert "stuck" in problem and store._thread.is_alive()
        store.close(timeout=0.5)
        assert audit_store.writer_problems() == []        # a closed store is no longer watched
    finally:
        release.set()


async def test_healthz_and_metrics_report_a_dead_writer(tmp_path):
    import aiohttp
    from aiohttp import web
    from prometheus_client import generate_latest

    from db.audit_store import AuditStore
    from handlers.delivery.guards import ChatSequencer
    from handlers.delivery.runners import _health_app
    from tests.fakes.bot_process import free_port

    store = AuditStore(tmp_path / "audit.db")
    port = free_port()
    runner = web.AppRunner(_health_app(ChatSequencer()))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                assert response.status == 200 and (await response.json())["status"] == "ok"
            store._queue.put(None)           # the writer thread ends while the store stays open
            store._thread.join(5)
            async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                body = await response.json()
                assert response.status == 503 and body["status"] != "ok", body
                assert "audit writer stopped" in body["problems"][0]
        assert "kefu_audit_writer_up 0.0" in generate_latest().decode()
    finally:
        await runner.cleanup()
        store.close(timeout=1)
    assert "kefu_audit_writer_up 1.0" in generate_latest().decode()


async def test_a_huge_vote_callback_or_update_id_then_a_normal_turn_reaches_the_store_through_the_real_bot(world):
    import sqlite3

    from handlers import texts

    fake, bot, workdir = world
    process = bot(SERVICE_HOURS="00:00-24:00")
    await process.start()

    def messages() -> list[str]:
        conn = sqlite3.connect(workdir / "data" / "audit.db")
        try:
            return [m for (m,) in conn.execute("SELECT message FROM audit WHERE kind = 'turn' ORDER BY id")]
        finally:
            conn.close()

    await fake.say(71, "足球多少钱")
    await fake.wait_replies(71, 1)
    answer = fake.sent[-1]
    await fake.press(answer, f"fb:up:{2 ** 63}")           # 25 bytes: within Telegram's 64
    await fake.wait_for(lambda: fake.callback_answers, what="the forged vote answered")
    await fake.say(71, "篮球多少钱")
    await fake.wait_replies(71, 2)
    await fake.wait_for(lambda: "篮球多少钱" in messages(), within=20, what="the later turn in the audit store")
    assert fake.callback_answers[-1].get("text") == texts.UNAVAILABLE     # refused as a stale button, not counted

    fake._next_update_id = 2 ** 63        # Telegram's update ids as a forged webhook or a broken server could send
    await fake.say(72, "足球多少钱")
    await fake.wait_replies(72, 1)
    await fake.say(72, "篮球多少钱")
    await fake.wait_replies(72, 2)
    await fake.wait_for(lambda: messages().count("篮球多少钱") == 2, within=20,
                        what="the turns with huge update ids in the audit store")
    code, output = await process.stop()
    assert code == 0, output
