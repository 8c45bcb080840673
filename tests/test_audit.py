"""The audit log: one JSON record per turn, read back by `audit tail`, followed with `-f`."""

import json
import threading

from agent.audit import AuditLog, follow, summary_line, tail
from agent.trace import TurnTrace, VerdictTrace
from agent.turn import TurnResult


def result(answer="足球售价120元", blocked=False):
    trace = TurnTrace(model="offline", model_calls=2, verdicts=[VerdictTrace(not blocked, ["UNVERIFIED_AMOUNT"]
                                                                              if blocked else [], "m")])
    return TurnResult(answer, "grounded", ["product:001"], ["001"], 1, trace)


def test_records_are_written_and_filtered(tmp_path):
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(path)
    audit.record(chat_id="1", user_id="u1", message="足球多少钱", result=result())
    audit.record(chat_id="2", user_id="u2", message="足球多少钱", result=result(blocked=True), update_id=5)
    audit.close()
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert [r["chat_id"] for r in lines] == ["1", "2"] and lines[1]["blocked"] and lines[1]["update_id"] == 5
    assert [r["chat_id"] for r in tail(path, chat="2")] == ["2"]
    assert [r["chat_id"] for r in tail(path, blocked=True)] == ["2"]
    assert "UNVERIFIED_AMOUNT" in summary_line(lines[1]) and "blocked" in summary_line(lines[1])


def test_rotation_keeps_writing(tmp_path):
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(path, max_bytes=2000, backups=2)
    for i in range(30):
        audit.record(chat_id=str(i), user_id="u", message="问" * 20, result=result())
    audit.close()
    assert (tmp_path / "audit.jsonl.1").exists() and tail(path, count=1)[0]["chat_id"] == "29"


def test_follow_sees_new_records(tmp_path):
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(path)
    seen = []

    start = path.stat().st_size if path.exists() else 0   # where following begins: no race with the writer

    def reader():
        for record in follow(path, poll=0.05, stop_after=5, start=start):
            seen.append(record["chat_id"])
            if len(seen) == 2:
                return

    thread = threading.Thread(target=reader)
    thread.start()
    audit.record(chat_id="7", user_id="u", message="q", result=result())
    audit.record(chat_id="8", user_id="u", message="q", result=result())
    thread.join(5)
    audit.close()
    assert seen == ["7", "8"]
