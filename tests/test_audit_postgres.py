"""The audit store on PostgreSQL (issue 25): the same signs of a misunderstanding as SQLite, the live feed's
cursor with writers racing, a database out of reach (batches kept, the queue's drops counted), the URL's
password kept out of every message, the commands and the page reading it, and two real worker processes
writing one store that one page shows. Against the real PostgreSQL on 127.0.0.1:5432, a schema per test."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest

import bot
from agent.audit import AuditLog
from db import audit_store
from db.audit_store import AuditEntry, AuditFilter, DatabaseUrl, open_reader, open_store

DEAD = "postgresql://kefu:s3cret-pw@127.0.0.1:1/test"    # nothing listens on port 1: refused at once


def _at(minutes: float) -> str:
    return (datetime.now(UTC) - timedelta(hours=3) + timedelta(minutes=minutes)).isoformat(timespec="milliseconds")


def _turn(chat: str, minutes: float, **fields) -> AuditEntry:
    time_ = _at(minutes)
    return AuditEntry(time_, "turn", chat, {"time": time_, "kind": "turn", "chat_id": chat, "flags": []}, **fields)


def test_signs_of_a_misunderstanding_attach_alike_in_both_stores(audit_target):
    """Own signs, a sign about the chat's answer before (within FLAG_WINDOW only), a 👎 naming the turn that
    answered its update; the filters, the stored record's `flags` and the daily counts see them."""
    store = open_store(audit_target)
    for entry in [
        _turn("1", 0, update_id=11),
        _turn("1", 1, flags=("fallback",), flags_on_previous_turn=("negative_reply",)),
        _turn("1", 2, flags_on_previous_turn=("rephrased",)),          # about the turn just before: the 2nd
        _turn("2", 0, update_id=21),
        AuditEntry(_at(3), "feedback", "2", {"kind": "feedback", "value": "down"}, update_id=21,
                   flags_on_answered_turn=("thumbs_down",)),
        _turn("3", 0),
        _turn("3", 120, flags_on_previous_turn=("negative_reply",)),   # two hours later: not attached
    ]:
        store.add(entry)
    assert store.flush(timeout=10)
    one = store.query(AuditFilter(chat_id="1"), newest_first=False)
    assert [r["flags"] for r in one] == [["negative_reply"], ["fallback", "rephrased"], []]
    assert [r["flags"] for r in store.query(AuditFilter(chat_id="3"), newest_first=False)] == [[], []]
    flagged = store.query(AuditFilter(misunderstood=True, kind="turn"), newest_first=False)
    assert [(r["chat_id"], r["flags"]) for r in flagged] == [
        ("1", ["negative_reply"]), ("2", ["thumbs_down"]), ("1", ["fallback", "rephrased"])]
    assert [r["chat_id"] for r in store.query(AuditFilter(flag="thumbs_down"))] == ["2"]
    assert store.count(AuditFilter(flag="rephrased")) == 1 and store.feedback_for([21, 99]) == {21: "down"}
    (day, *rest) = store.daily(datetime.now(UTC) - timedelta(days=2))
    counted = {"turns": sum(d["turns"] for d in [day, *rest]), "misunderstood": sum(d["misunderstood"] for d in [day, *rest])}
    assert counted == {"turns": 6, "misunderstood": 3}
    assert sum(d["flags"].get("negative_reply", 0) for d in [day, *rest]) == 1
    store.close()


def test_odd_values_reach_the_postgres_store_or_are_skipped_alone(pg_url):
    """An update id beyond bigint (the column empty, the record keeps it), NUL in the text (U+FFFD in the
    columns, found by a filter with NUL too), a latency that is not a number (that record alone skipped)."""
    store = open_store(DatabaseUrl(pg_url))
    huge = _turn("9", 0, update_id=2 ** 64 + 5, model_calls=2 ** 70)
    store.add(AuditEntry(huge.time, "turn", "9", {**huge.record, "update_id": 2 ** 64 + 5}, update_id=2 ** 64 + 5,
                         model_calls=2 ** 70))
    store.add(_turn("nul\x00chat", 1, message="在吗\x00？"))
    store.add(_turn("bad", 2, latency_ms="slow"))
    store.add(_turn("after", 3))
    assert store.flush(timeout=10) and store._thread.is_alive()
    assert store.failed == 1 and store.written == 3
    assert [r["chat_id"] for r in store.query(newest_first=False)] == ["9", "nul\ufffdchat", "after"]   # no NUL in PG
    assert store.query(newest_first=False)[0]["update_id"] == 2 ** 64 + 5
    assert store.count(AuditFilter(chat_id="nul\x00chat")) == 1 and store.count(AuditFilter(text="吗\x00")) == 1
    assert store.feedback_for([2 ** 64 + 5, 1]) == {}
    with store._pool.connection() as conn:        # a row another tool wrote: a document that is not an object
        (foreign,) = conn.execute("INSERT INTO audit (time, kind, chat_id, record) VALUES (%s, 'turn', 'x', '[1, 2]') "
                                  "RETURNING id", (_at(4),)).fetchone()
    assert store.get(foreign) == {"id": foreign} and store.query(limit=1) == [{"id": foreign}]
    days = store.daily(datetime.now(UTC) - timedelta(days=1))   # (the turns may straddle midnight in Shanghai)
    assert sum(d["turns"] for d in days) == 4 and [c for d in days for c in d["model_calls"]] == []   # 2**70: out
    store.close()


def test_the_live_feed_cursor_misses_no_row_that_commits_late(pg_url):
    """Host A's batch is drawn and written but not yet committed when host B writes: B waits for A, so a
    page polling for ids above the last it showed never steps over A's row (ids show in order)."""
    url = DatabaseUrl(pg_url)
    first, second, page = open_store(url), open_store(url), open_reader(url)
    in_flight, release = threading.Event(), threading.Event()
    flag = first._flag

    def slow_flag(cur, entry, own_id):   # inside A's transaction, after its rows are written
        in_flight.set()
        assert release.wait(20)
        flag(cur, entry, own_id)

    first._flag = slow_flag
    seen: list[int] = []

    def poll() -> None:
        for row in page.query(after_id=max(seen, default=0), newest_first=False, limit=200):
            seen.append(row["id"])

    first.add(_turn("a", 0))
    assert in_flight.wait(10)
    second.add(_turn("b", 1))
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:   # B has had time to commit, were it not waiting for A
        poll()
        time.sleep(0.05)
    assert seen == []
    release.set()
    assert first.flush(timeout=10) and second.flush(timeout=10)
    poll()
    rows = page.query(newest_first=False)
    assert [r["chat_id"] for r in rows] == ["a", "b"] and seen == [r["id"] for r in rows]
    for store in (first, second, page):
        store.close()


def _cut(store, url: str = DEAD) -> None:
    """The writer's database goes away: its connection is dropped and every new one is refused."""
    from db.audit_postgres import conninfo

    store._conninfo = conninfo(DatabaseUrl(url))
    store._drop_connection()


def _wait(predicate, what: str, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_database_out_of_reach_keeps_the_batch_counts_the_drops_and_catches_up(pg_url, monkeypatch, caplog):
    from db.audit_postgres import conninfo

    monkeypatch.setattr(audit_store, "PAUSES", (0.05, 0.1, 0.2))
    store = open_store(DatabaseUrl(pg_url), queue_size=4)
    reachable = store._conninfo
    _cut(store)
    store.add(_turn("kept", 0))
    _wait(lambda: store.problem() is not None and "unreachable" in store.problem(), "the writer says unreachable")
    accepted = sum(store.add(_turn(f"q{n}", n)) for n in range(10))      # the queue fills while it waits
    assert accepted == 4 and store.dropped == 6 and "dropped so far" in caplog.text
    assert store.count() == 0 and store._thread.is_alive()               # the readers still answer
    assert store.written == 0 and store.failed == 0
    store._conninfo = reachable                                          # back
    assert store.flush(timeout=10)
    assert store.count() == 5 and store.problem() is None and store.written == 5
    assert [r["chat_id"] for r in store.query(newest_first=False)][0] == "kept"
    assert "audit store unreachable (OperationalError)" in caplog.text and "reachable again" in caplog.text
    assert "s3cret" not in caplog.text and conninfo(DatabaseUrl(pg_url)) == reachable
    store.close()


async def test_a_server_that_stops_answering_has_its_call_cut_and_the_batch_waits(pg_url, monkeypatch, caplog):
    """A PostgreSQL that goes silent mid-batch while its host's TCP still acknowledges (a proxy that holds
    every byte): the client-side deadline cuts the call, the batch is kept, and written once it answers."""
    from db import audit_postgres
    from tests.fakes.tcp_proxy import TcpProxy

    monkeypatch.setattr(audit_postgres, "CALL_SECONDS", 1.0)
    monkeypatch.setattr(audit_store, "PAUSES", (0.2,))
    proxy = await TcpProxy("127.0.0.1", 5432).start()
    url = pg_url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}") + "&connect_timeout=2"
    store = await asyncio.to_thread(open_store, DatabaseUrl(url))
    try:
        proxy.cut()
        store.add(_turn("held", 0))
        for _ in range(200):
            if store._unreachable_since is not None:
                break
            await asyncio.sleep(0.05)
        assert store._unreachable_since is not None and "its connection was cut" in caplog.text
        assert store.written == 0 and store.failed == 0 and store._thread.is_alive()
        proxy.heal()
        assert await asyncio.to_thread(store.flush, 30)
        assert [r["chat_id"] for r in await asyncio.to_thread(store.query)] == ["held"] and store.dropped == 0
    finally:
        proxy.heal()
        await asyncio.to_thread(store.close)
        await proxy.stop()


def test_closing_while_the_database_is_away_drops_what_is_kept_counted_and_returns(pg_url, monkeypatch, caplog):
    monkeypatch.setattr(audit_store, "PAUSES", (30.0,))
    store = open_store(DatabaseUrl(pg_url))
    _cut(store)
    for n in range(3):
        store.add(_turn(str(n), n))
    _wait(lambda: store._unreachable_since is not None, "the writer waits for the database")
    started = time.monotonic()
    store.close(timeout=5)
    assert time.monotonic() - started < 5 and not store._thread.is_alive()
    assert store.dropped == 3 and "audit store unreachable at close" in caplog.text   # one or two batches
    assert audit_store.writer_problems() == [] and "s3cret" not in caplog.text


def test_a_password_in_audit_db_reaches_no_message(monkeypatch, caplog):
    from agent.settings import Settings, StartupError, audit_target
    from agent.startup import open_audit_store

    monkeypatch.setenv("AUDIT_DB", DEAD)
    settings = Settings(_env_file=None)
    assert "s3cret" not in repr(settings) and "s3cret" not in str(settings.model_dump())
    target = audit_target(settings.audit_db)
    assert str(target) == repr(target) == "postgresql://127.0.0.1:1/test"
    with pytest.raises(StartupError) as refused:
        open_audit_store(settings)
    assert str(refused.value) == "AUDIT_DB: cannot open the PostgreSQL audit store at postgresql://127.0.0.1:1/test " \
        "(OperationalError)"
    with pytest.raises(StartupError) as other:
        audit_target("mysql://kefu:s3cret-pw@127.0.0.1/kefu")
    assert str(other.value).startswith("AUDIT_DB: a mysql: URL is not supported")
    assert "s3cret" not in str(other.value) + caplog.text


def test_the_commands_read_the_postgres_store(pg_url, monkeypatch, capsysbinary):
    """`audit tail`, `audit export` (CSV, JSON Lines, --flagged) and `stats` with --db naming PostgreSQL."""
    store = open_store(DatabaseUrl(pg_url))
    now = datetime.now(UTC)
    for n, message in enumerate(["足球多少钱", "=不对"]):
        time_ = (now - timedelta(seconds=10 - n)).isoformat(timespec="milliseconds")
        store.add(AuditEntry(time_, "turn", "5", {"time": time_, "kind": "turn", "chat_id": "5", "message": message,
                                                  "answer": "足球售价120元", "status": "grounded", "flags": []},
                             message=message, status="grounded", flags_on_previous_turn=("negative_reply",) if n else ()))
    assert store.flush(timeout=10)
    store.close()
    monkeypatch.delenv("AUDIT_DB", raising=False)
    assert bot.main(["audit", "tail", "--db", pg_url]) == 0
    tail = capsysbinary.readouterr().out.decode()
    assert tail.index("问：足球多少钱") < tail.index("问：=不对")
    assert bot.main(["audit", "export", "--format", "csv", "--db", pg_url]) == 0
    exported = capsysbinary.readouterr()
    assert exported.out.decode("utf-8-sig").count("\r\n") == 3 and b"'=\xe4\xb8\x8d\xe5\xaf\xb9" in exported.out
    assert b"2 audit records exported" in exported.err
    assert bot.main(["audit", "export", "--flagged", "--format", "jsonl", "--db", pg_url]) == 0
    (line,) = [json.loads(x) for x in capsysbinary.readouterr().out.decode().splitlines()]
    assert line["flags"] == ["negative_reply"] and [t["say"] for t in line["turns"]] == ["足球多少钱"]
    from agent.clock import SHANGHAI

    day = (now - timedelta(seconds=10)).astimezone(SHANGHAI).date().isoformat()   # the turns' day in Shanghai
    assert bot.main(["stats", "--day", day, "--db", pg_url]) == 0
    assert "对话轮次：2" in capsysbinary.readouterr().out.decode()
    assert bot.main(["audit", "tail", "--db", DEAD]) == 2
    err = capsysbinary.readouterr().err.decode()
    assert "--db: cannot open the PostgreSQL audit store at postgresql://127.0.0.1:1/test" in err and "s3cret" not in err


async def test_the_page_shows_the_turns_of_every_host(pg_url):
    """Two writers ("hosts") on one database; the console of a third process shows both, and its live feed
    brings each one's new turns."""
    from agent.trace import TurnResult, TurnTrace
    from handlers.web.app import build_web_app
    from tests.fakes.local_http import serve
    from tests.test_web import TOKEN, logged_in

    url = DatabaseUrl(pg_url)
    hosts = [AuditLog(open_store(url)), AuditLog(open_store(url))]
    answer = TurnResult("足球售价120元。", "grounded", ["product:001"], trace=TurnTrace(model="offline"))
    for n, host in enumerate(hosts):
        host.record(chat_id=f"{n + 1}0", user_id="u", message=f"主机{n + 1}的问题", result=answer)
        assert host.store.flush(timeout=10)
    reader = open_reader(url)
    runner, base = await serve(build_web_app(reader, TOKEN))
    try:
        session = await logged_in(base)
        async with session:
            page = await (await session.get(f"{base}/")).text()
            assert "主机1的问题" in page and "主机2的问题" in page and "共 2 条" in page
            only = await (await session.get(f"{base}/?q=主机2")).text()
            assert "主机2的问题" in only and "主机1的问题" not in only and "共 1 条" in only
            (second,) = reader.query(AuditFilter(chat_id="20"))
            detail = await session.get(f"{base}/turn/{second['id']}")
            assert detail.status == 200 and "主机2的问题" in await detail.text()
            assert (await session.get(f"{base}/summary")).status == 200
            async with session.get(f"{base}/events", timeout=aiohttp.ClientTimeout(total=20)) as stream:
                await stream.content.readline()                     # ": connected"
                for n, host in enumerate(hosts):
                    host.record(chat_id=f"{n + 1}1", user_id="u", message=f"主机{n + 1}的新问题", result=answer)
                data: list[str] = []
                while len(data) < 2:
                    line = (await asyncio.wait_for(stream.content.readline(), 10)).decode()
                    if line.startswith("data:"):
                        data.append(line)
                messages = sorted(json.loads(d[5:])["message"] for d in data)
                assert messages == ["主机1的新问题", "主机2的新问题"]
    finally:
        await runner.cleanup()
        reader.close()
        for host in hosts:
            host.close()


@pytest.mark.slow
async def test_two_worker_processes_write_one_postgres_store_and_one_page_shows_both(world, pg_url):
    """Issue 25: two worker processes (`bot.py`, which also receives, and `bot.py work`) with AUDIT_DB on
    PostgreSQL; every turn is in the one store, each worker wrote some, and the console of one shows the
    other's turns."""
    from tests.fakes.bot_process import free_port
    from tests.test_web import TOKEN, logged_in

    fake, bot_, _ = world
    port = free_port()
    env = {"AUDIT_DB": pg_url, "INBOX_PARTITIONS": "2", "INBOX_LEASE_MS": "1500", "SERVICE_HOURS": "00:00-24:00"}
    first = bot_(**env, AUDIT_WEB_PORT=str(port), AUDIT_WEB_TOKEN=TOKEN)   # receives and works
    second = bot_("work", **env)
    await asyncio.gather(*(process.start() for process in (first, second)))   # starts overlap

    def said(process, text: str) -> bool:
        return text in process.output.decode(errors="replace")

    await fake.wait_for(lambda: said(first, "took partition") and said(second, "took partition"), within=30,
                        what="each worker serving a partition")
    chats = list(range(601, 609))      # spread over both partitions
    for chat in chats:
        await fake.say(chat, "足球多少钱")
    for chat in chats:
        assert "120元" in (await fake.wait_replies(chat, 1, within=60))[0]
    # a turn's log line is written after its reply is sent (with the audit record): wait for every one
    await fake.wait_for(lambda: all(said(first, f"turn chat={c} ") or said(second, f"turn chat={c} ") for c in chats),
                        within=20, what="every turn logged by the worker that answered it")
    by_second = [c for c in chats if said(second, f"turn chat={c} ")]
    assert by_second and len(by_second) < len(chats), "one worker answered every chat"
    reader = await asyncio.to_thread(open_reader, DatabaseUrl(pg_url))
    try:
        await fake.wait_for(lambda: reader.count(AuditFilter(kind="turn")) >= len(chats), within=20,
                            what="every turn in the PostgreSQL store")
        turns = await asyncio.to_thread(reader.query, AuditFilter(kind="turn"), 1000)
        assert sorted(int(r["chat_id"]) for r in turns) == sorted(chats)     # every turn, once
    finally:
        reader.close()
    session = await logged_in(f"http://127.0.0.1:{port}")
    async with session:
        page = await (await session.get(f"http://127.0.0.1:{port}/?chat={by_second[0]}")).text()
        assert "足球多少钱" in page and "共 1 条" in page                   # the other worker's turn
        assert f"共 {len(chats)} 条" in await (await session.get(f"http://127.0.0.1:{port}/?kind=turn")).text()
    for code, output in await asyncio.gather(*(process.stop() for process in (first, second))):
        assert code == 0, output
