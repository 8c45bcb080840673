"""What operators read is safe to read: customer names cleaned of invisible and bidi characters, `bot.py audit
tail` showing a customer's terminal escape sequences escaped, the audit files the owner's alone (0600), and a
database URL in AUDIT_DB refused in one line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent.audit import AuditLog
from agent.turn import TurnResult

BOT = Path(__file__).resolve().parent.parent / "bot.py"
ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\u009b31m"


def _result(answer: str) -> TurnResult:
    from agent.trace import TurnTrace

    return TurnResult(answer, "grounded", [], [], 1, TurnTrace(model="offline", model_calls=1))


def _bot(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("AUDIT_DB", "AUDIT_PATH", "BOT_TOKEN")}
    return subprocess.run([sys.executable, str(BOT), *args], capture_output=True, cwd=cwd, timeout=120,
                          env={**environ, **env}, stdin=subprocess.DEVNULL)


def test_the_name_cleaner_drops_what_cannot_be_seen():
    from handlers.handoff import readable, topic_title

    assert readable("小\u2800明\u200b\u200d\u202e\u2066\ufeff\x1b\n\u2028 \u3000 王") == "小明 王"
    assert readable("\u3164\u115f\u1160\uffa0") == ""
    assert readable("e\u0301\u0301\u0301\u0301\u0301") == "e\u0301\u0301"          # no combining-mark towers
    assert topic_title(7, "\u2800\u200b") == "7" and topic_title(7, None) == "7"
    assert topic_title(7, "7 · 8" + "\u2800" * 200) == "7 · 7 · 8"


@pytest.mark.slow   # runs bot.py commands (conftest: slow)
def test_audit_tail_shows_a_customers_escape_sequences_escaped(tmp_path):
    from db.audit_store import AuditStore

    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    audit.record(chat_id="1", user_id="u1", message=f"足球{ESCAPES}多少钱\n2020-01-01 chat=999 fake",
                 result=_result(f"答{ESCAPES}"))
    audit.event("relay", "1", direction="to_operators", text=f"在吗{ESCAPES}")
    audit.close()
    db = str(tmp_path / "audit.db")
    for args, env in ((["audit", "tail"], {"AUDIT_DB": db}), (["audit", "tail", "--json", "--db", db], {})):
        run = _bot(tmp_path, *args, **env)
        assert run.returncode == 0, run.stderr
        out = run.stdout.decode("utf-8")
        assert "足球" in out and "在吗" in out
        assert not any(c in out for c in "\x1b\x07\u009b"), repr(out)
        assert "\\x1b]52;c;" in out or "\\u001b]52;c;" in out
    text = _bot(tmp_path, "audit", "tail", AUDIT_DB=db).stdout.decode("utf-8")
    assert "\\x1b[2J" in text and "\\x9b31m" in text
    assert not any(line.startswith("2020-01-01 chat=999") for line in text.splitlines())   # no forged line


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_audit_files_are_created_readable_by_the_owner_only(tmp_path):
    from db.audit_store import AuditStore

    old = os.umask(0o022)                      # the usual umask: files would be world-readable
    try:
        store = AuditStore(tmp_path / "audit.db")
        audit = AuditLog(store, tmp_path / "audit.jsonl", jsonl_max_bytes=600, jsonl_backups=2)
        for n in range(6):
            audit.record(chat_id=str(n), user_id="u", message="问" * 60, result=_result("答"))
        store.flush()
        live = [tmp_path / name for name in ("audit.db", "audit.db-wal", "audit.db-shm")]   # while open
        assert all(f.exists() for f in live), sorted(p.name for p in tmp_path.iterdir())
        modes = {f.name: oct(_mode(f)) for f in live}
        audit.close()                          # the JSON Lines copy is written by its own thread: all of it now
        rotated = [tmp_path / name for name in ("audit.jsonl", "audit.jsonl.1")]
        assert all(f.exists() for f in rotated), sorted(p.name for p in tmp_path.iterdir())
        modes |= {f.name: oct(_mode(f)) for f in rotated}
        assert modes == {f.name: "0o600" for f in live + rotated}
    finally:
        os.umask(old)


@pytest.mark.slow   # runs bot.py commands (conftest: slow)
def test_an_export_file_is_created_readable_by_the_owner_only(tmp_path):
    from db.audit_store import AuditStore

    audit = AuditLog(AuditStore(tmp_path / "audit.db"))
    audit.record(chat_id="1", user_id="u", message="足球多少钱", result=_result("答"))
    audit.close()
    run = _bot(tmp_path, "audit", "export", "--db", str(tmp_path / "audit.db"), "-o", str(tmp_path / "out.csv"))
    assert run.returncode == 0, run.stderr
    assert _mode(tmp_path / "out.csv") == 0o600


@pytest.mark.slow   # runs bot.py commands (conftest: slow)
@pytest.mark.parametrize("url", ["postgresql://kefu:s3cret@127.0.0.1:1/kefu", "sqlite:///data/audit.db",
                                 "mysql://kefu:s3cret@127.0.0.1:1/kefu"])
def test_a_database_url_in_audit_db_is_refused_or_unreachable_in_one_line(tmp_path, url):
    """A URL of another database is refused; a PostgreSQL URL is the PostgreSQL store, and one that does
    not answer stops the command (and the bot's start-up) naming its host, never its password."""
    for args in (["audit", "tail"], *([["console"]] if url.startswith("postgres") else [])):   # console: start-up
        run = _bot(tmp_path, *args, AUDIT_DB=url, SEARCH_MODE="lexical")
        err = run.stderr.decode().strip().splitlines()
        assert run.returncode == 2 and len(err) >= 1, run
        line = err[-1]
        if url.startswith("postgres"):
            assert line == "kefu-bot: AUDIT_DB: cannot open the PostgreSQL audit store at " \
                "postgresql://127.0.0.1:1/kefu (OperationalError)", line
        else:
            assert line.startswith("kefu-bot: AUDIT_DB: a ") and "URL is not supported" in line
            assert "takes the path of a SQLite file (default data/audit.db) or a postgresql:// URL" in line
        assert "s3cret" not in run.stderr.decode() and "s3cret" not in run.stdout.decode()
        assert not [p for p in tmp_path.rglob("*") if p.name.endswith(":")]   # no `postgresql:` folder
