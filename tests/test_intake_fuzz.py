"""What a stranger can send to the webhook, and what a client can put in a callback, never stops the intake
or the audit trail (issue 22, items 6 and "done when"): any secret header bytes are a 4xx (never a 500 with
a traceback), any body is a 200 or a 400, the receiver keeps appending genuine updates; any callback data
goes through the real dispatcher and the audit writer goes on writing. Hypothesis, in process, real Redis."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
from aiogram import Bot, Dispatcher
from aiogram.types import Update
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handlers import buttons
from handlers.delivery.inbox import Inbox
from handlers.delivery.runners import WEBHOOK_PATH, CheckedRequestHandler, add_webhook_intake
from tests.fakes.bot_session import RecordingSession
from tests.fakes.redis_support import connect, drop_prefix, unique_prefix

SECRET = "s3cret-Token_for-the-webhook"
_ids = iter(range(7 * 10**8, 8 * 10**8))


def update_json(update_id: int, chat_id: int, text: str) -> bytes:
    return json.dumps({"update_id": update_id, "message": {
        "message_id": 1, "date": int(time.time()), "text": text, "chat": {"id": chat_id, "type": "private"},
        "from": {"id": chat_id, "is_bot": False, "first_name": "顾客"}}}).encode()


async def post(port: int, body: bytes, secret: bytes | None = SECRET.encode()) -> int:
    """A raw HTTP POST (a client library would refuse or re-encode odd header bytes): the status code."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
    head = (f"POST {WEBHOOK_PATH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n").encode()
    if secret is not None:
        head += b"X-Telegram-Bot-Api-Secret-Token: " + secret + b"\r\n"
    writer.write(head + b"\r\n" + body)
    try:
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    return int(answer.split(b" ", 2)[1])


class Errors(logging.Handler):
    """Every record at ERROR or above, from any logger (aiohttp logs a handler's exception there)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def errors():
    handler = Errors()
    logging.getLogger().addHandler(handler)
    try:
        yield handler.records
    finally:
        logging.getLogger().removeHandler(handler)


async def serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]


ODD_SECRETS = [b"\xc3\xa9t\xc3\xa9", b"\xff\xfe", "密钥".encode(), b"\x80" * 40, SECRET.encode() + b"\xe2\x80\x8b",
               SECRET.encode()[:-1], b""]


async def test_odd_secret_headers_and_bodies_are_4xx_on_both_webhook_handlers(redis, errors):
    """The inbox's intake (`python bot.py` with Redis) and aiogram's handler (webhook without Redis)."""
    inbox = Inbox(redis, redis.test_prefix, partitions=2)
    await inbox.ensure_groups()
    with_inbox = web.Application()
    add_webhook_intake(with_inbox, inbox, SECRET)
    bot = Bot("42:TEST", session=RecordingSession())
    fed: list[Update] = []
    dispatcher = Dispatcher()
    dispatcher.update.outer_middleware(lambda handler, event, data: _record(fed, event))
    without = web.Application()
    CheckedRequestHandler(dispatcher=dispatcher, bot=bot, secret_token=SECRET).register(without, path=WEBHOOK_PATH)
    runners = []
    try:
        for app in (with_inbox, without):
            runner, port = await serve(app)
            runners.append(runner)
            for secret in ODD_SECRETS:
                assert await post(port, update_json(next(_ids), 5, "足球"), secret) == 401, secret
            assert await post(port, update_json(next(_ids), 5, "足球"), None) == 401
            for body in (b"", b"{", b"\xff\xfe", b"[]", b'{"update_id": "x"}', "足球".encode()):
                assert await post(port, body) == 400, body
            assert await post(port, update_json(next(_ids), 5, "足球多少钱")) == 200
        assert len(await redis.xrange(inbox.stream(inbox.partition_of(Update.model_validate_json(
            update_json(1, 5, "x")))))) == 1                     # only the genuine update was appended
        await asyncio.sleep(0)                                   # aiogram feeds in a background task
        for _ in range(100):
            if fed:
                break
            await asyncio.sleep(0.02)
        assert [u.message.text for u in fed] == ["足球多少钱"]
    finally:
        for runner in runners:
            await runner.cleanup()
        await bot.session.close()
    assert not errors, [r.getMessage() for r in errors]


async def _record(fed: list, event) -> None:
    fed.append(event)


# --- hypothesis: the intake -------------------------------------------------------------------------------

TEXTS = st.one_of(st.text(max_size=40), st.sampled_from(["\udc80足球", "\ud800", "\x00", "\u202e转人工", "🙂" * 30]))
BODIES = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.builds(update_json, st.integers(-(2 ** 70), 2 ** 70), st.integers(-(2 ** 64), 2 ** 64), TEXTS),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                 lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                 max_leaves=12).map(lambda v: json.dumps({"update_id": 1, "message": v}).encode()),
)
SECRETS = st.one_of(st.just(SECRET.encode()), st.binary(max_size=60).map(
    lambda b: b.replace(b"\r", b"").replace(b"\n", b"").replace(b"\x00", b"").strip()))


@pytest.fixture
def intake():
    """The inbox's webhook intake on real Redis, one event loop for every example."""
    loop = asyncio.new_event_loop()
    redis = loop.run_until_complete(connect())
    prefix = unique_prefix()
    inbox = Inbox(redis, prefix, partitions=2)
    loop.run_until_complete(inbox.ensure_groups())
    app = web.Application()
    add_webhook_intake(app, inbox, SECRET)
    runner, port = loop.run_until_complete(serve(app))
    try:
        yield loop, port, inbox
    finally:
        loop.run_until_complete(runner.cleanup())
        loop.run_until_complete(drop_prefix(redis, prefix))
        loop.run_until_complete(redis.aclose())
        loop.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES, secret=SECRETS)
def test_any_request_to_the_intake_is_answered_and_the_receiver_goes_on(intake, errors, body, secret):
    loop, port, inbox = intake
    status = loop.run_until_complete(post(port, body, secret))
    # a wrong secret is refused (401), or the request before it (400: bytes no HTTP header holds)
    assert status in ((200, 400) if secret == SECRET.encode() else (400, 401)), (status, body, secret)
    genuine = next(_ids)                                          # and the next genuine update is taken
    assert loop.run_until_complete(post(port, update_json(genuine, 9, "足球多少钱"))) == 200
    assert loop.run_until_complete(inbox.redis.exists(inbox.marker(inbox.layout.of_chat(9), "seen", genuine)))
    assert not errors, [r.getMessage() for r in errors]


# --- hypothesis: callback data through the real dispatcher, into the real audit store -------------------

BIG = st.one_of(st.integers(0, 10), st.integers(2 ** 62, 2 ** 64), st.integers(-(2 ** 64), 2 ** 70))
CALLBACKS = st.one_of(
    st.text(max_size=64),
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
    st.builds(lambda v, n, s: f"fb:{v}:{n}:{s}", st.sampled_from(["up", "down", "x", ""]), BIG, st.text(max_size=20)),
    st.builds(lambda a, n: f"ho:{a}:{n}", st.sampled_from(["ask", "claim", "close", "x"]), BIG),
    st.builds(lambda v, chat, n: ("signed", v, chat, n), st.sampled_from(["up", "down"]), st.integers(1, 2 ** 52),
              st.integers(0, buttons.MAX_UPDATE_ID)),   # genuine votes: the accept path writes audit records
)


@pytest.fixture
def voting(tmp_path):
    """One dispatcher with a real audit store (SQLite, its writer thread) for every example. Callbacks reach
    no conversation turn (and no operators' desk: none is configured), so it has none."""
    from agent.audit import AuditLog
    from agent.handoff import LocalHandoffStore
    from db.audit_store import AuditStore
    from handlers.delivery.guards import ChatSequencer, LocalGuards
    from handlers.handoff import Desk
    from handlers.operators import Operators
    from handlers.telegram import build_dispatcher

    loop = asyncio.new_event_loop()
    bot = Bot("42:TEST", session=RecordingSession())
    store = AuditStore(tmp_path / "audit.db")
    audit = AuditLog(store)
    handoffs, guards = LocalHandoffStore(), LocalGuards(rate_limit=10 ** 6)
    dispatcher = build_dispatcher(operators=Operators(frozenset({777}), None), conversation=None,
                                  desk=Desk(bot, handoffs, None, audit=audit), guards=guards,
                                  sequencer=ChatSequencer(), audit=audit)
    try:
        yield loop, dispatcher, bot, store, audit
    finally:
        store.close(timeout=5)
        loop.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=CALLBACKS, update_id=BIG, chat=st.integers(1, 2 ** 52))
def test_any_callback_data_never_stops_the_dispatcher_or_the_audit_writer(voting, errors, data, update_id, chat):
    loop, dispatcher, bot, store, audit = voting
    if isinstance(data, tuple):
        _, value, chat, turn = data
        data = buttons.Vote(value=value, update_id=turn, sig=buttons.vote_signature(bot.token, chat, turn)).pack()
    raw = {"update_id": update_id, "callback_query": {
        "id": str(next(_ids)), "chat_instance": "x", "data": data,
        "from": {"id": chat, "is_bot": False, "first_name": "顾客"},
        "message": {"message_id": 1, "date": int(time.time()), "chat": {"id": chat, "type": "private"}, "text": "答"}}}
    try:
        update = Update.model_validate(raw)
    except ValueError:
        return   # what the Bot API library refuses before any handler
    loop.run_until_complete(asyncio.wait_for(dispatcher.feed_update(bot, update), 10))
    marker = f"after {next(_ids)}"                    # the writer still writes what comes next
    audit.event("relay", str(chat), text=marker)
    assert store.flush(10) and store.problem() is None
    assert marker in json.dumps(store.query(limit=1)[0], ensure_ascii=False)
    assert store.failed == 0 and not errors, [r.getMessage() for r in errors]
