"""`bot.py audit export --flagged`: the turns the bot may have misunderstood, as dialogue-evaluation lines
(`{"family", "variant", "split", "turns": [{"say", "must", "must_not"}]}`, what `eval-dialogues` reads), each
with the customer messages that led to it, so a shop turns its own failures into tests: it writes what the
answer must say in `must` and runs `python bot.py eval-dialogues --dialogues FILE`. As CSV, one row per
customer message, in the same fields."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from agent.audit_record import TurnRecord
from agent.clock import shop_iso

CONTEXT_TURNS = 3   # the customer's messages before the flagged one that go with it
CSV_COLUMNS = ("family", "variant", "split", "step", "say", "must", "must_not", "bot_answer", "flags", "time",
               "chat_id")


def dialogues(reader: Any, flagged: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """One dialogue per flagged turn: the chat's turns up to it (at most CONTEXT_TURNS before), in order."""
    from db.audit_store import AuditFilter

    for row in flagged:
        record = TurnRecord.of(row)
        try:
            until = datetime.fromisoformat(record.time)
        except ValueError:
            until = None
        context = [] if until is None else [
            TurnRecord.of(r) for r in reader.query(AuditFilter(chat_id=record.chat_id, kind="turn", until=until),
                                                   limit=CONTEXT_TURNS)][::-1]
        steps = [{"say": r.message or "", "must": [], "must_not": [], "bot_answer": r.answer or ""}
                 for r in [*context, record] if r.message]
        yield {"family": "flagged:" + "+".join(record.flags), "variant": f"audit-{record.id}", "split": "train",
               "turns": steps, "flags": list(record.flags), "time": shop_iso(record.time), "chat_id": record.chat_id}


def as_jsonl(lines: Iterable[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")


def as_csv(lines: Iterable[dict[str, Any]]) -> bytes:
    """UTF-8 with a byte-order mark (Excel); must / must_not as JSON lists inside their cell."""
    from agent.analytics.stats import _cell

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for line in lines:
        for step, turn in enumerate(line["turns"], start=1):
            writer.writerow([_cell(v) for v in (
                line["family"], line["variant"], line["split"], step, turn["say"], json.dumps(turn["must"]),
                json.dumps(turn["must_not"]), turn["bot_answer"], " ".join(line["flags"]), line["time"],
                line["chat_id"])])
    return ("\ufeff" + out.getvalue()).encode("utf-8")
