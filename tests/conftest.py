"""Shared fixtures: a demo catalog file built once per session, opened read-only per test.

Tests that start real processes (`python bot.py`, Chromium, Caddy, a redis-server they crash or freeze)
are `slow`: marked here by the fixtures they use, or in their module with @pytest.mark.slow (those calling
`remote_bot` or running a `bot.py` command): `python -m pytest -m "not slow"` is the quick subset. (A
private redis-server that only has to be there, `redis_alone`, starts in a fraction of a second: not
slow.) The suite runs in parallel (pytest-xdist); each worker keeps to its own tmp dirs, Redis key
prefixes and ports, and the expensive builds (the demo catalog and its index) are made once per run,
shared by the workers."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import handlers.aiogram_import  # noqa: F401 - as in the bot: aiogram's schemas built where first used

# isort: split
from db.connection import open_readonly
from db.records import demo_catalog
from retrieval.documents import doc_from_product
from retrieval.embedders import LocalE5Embedder
from retrieval.index import VectorIndex, build_index
from retrieval.search import ProductSearch
from tests.fakes.demo import DEMO_DAY

ROOT = Path(__file__).resolve().parent.parent
# fixtures that start a real process of their own (by the module defining them): a test using one is
# `slow` (test_fuzz has an in-process `world` of its own, which is not)
SLOW_FIXTURES = {("world", __name__), ("own_redis", "tests.test_faults"), ("browser", "tests.test_browser")}


# real-process tests in files being edited elsewhere, marked here rather than there
SLOW_TESTS = {"tests/test_audit.py::test_audit_export_and_tail_on_the_command_line"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        used = {(name, definitions[-1].func.__module__)   # the last definition is the one the test gets
                for name, definitions in (info.name2fixturedefs.items() if info else ()) if definitions}
        if SLOW_FIXTURES & used or item.nodeid.split("[")[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
    # the long real-process tests first, in their files' order: the run then ends on short tests that fill
    # the workers evenly, not on a 30-second test that one worker started last
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core and one more: many tests spend part of their time waiting — a process
    starting or stopping, a model stalling on purpose, Redis frozen for ten seconds, a worker waiting for
    the shared demo build — and a spare worker keeps the cores busy meanwhile (the quick subset on two
    cores: 158% CPU and 96 s with two workers, 178% and 87 s with three, same hour)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


@pytest.fixture(scope="session", autouse=True)
def shared_builds(tmp_path_factory) -> Path:
    """A directory shared by every xdist worker of this run (each worker's own base temp under xdist is
    a child of the run's), where tests/fakes/prebuilt.py builds the demo catalog and index once."""
    from tests.fakes import prebuilt

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    prebuilt.SHARED = root / "shared-builds"
    prebuilt.SHARED.mkdir(exist_ok=True)
    return prebuilt.SHARED


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory, shared_builds) -> Path:
    """The demo catalog (as of DEMO_DAY): this worker's own copy of the one built once per run."""
    from tests.fakes import prebuilt

    return prebuilt.demo_data(tmp_path_factory.mktemp("catalog"))[0]


@pytest.fixture
async def conn(demo_db):
    connection = await open_readonly(demo_db)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture
async def vocabulary(conn):
    """The message reader's words of the demo catalog (names, brands, categories, other names)."""
    from agent.vocabulary import Vocabulary
    from db.catalog import catalog_aliases, catalog_words
    return Vocabulary.of(await catalog_words(conn), await catalog_aliases(conn))


@pytest.fixture
def agent(conn, search):
    """The turn loop over the demo catalog with the offline model."""
    from agent.turn import Agent
    return Agent(conn, search)


@pytest.fixture(scope="session")
def docs():
    return [doc_from_product(p.__dict__) for p in demo_catalog(DEMO_DAY).products]


@pytest.fixture(scope="session")
def local_embedder():
    return LocalE5Embedder()


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory, shared_builds, docs, local_embedder):
    """The index of `docs`, built on a copy of the one built once per run for the same catalog:
    build_index keeps what is there for the same documents and embeds any that differ."""
    from tests.fakes import prebuilt

    path = prebuilt.demo_data(tmp_path_factory.mktemp("index"))[1]
    asyncio.run(build_index(path, docs, local_embedder, progress=False))
    return VectorIndex.load(path, local_embedder.name)


@pytest.fixture(scope="session")
def search(docs, local_embedder, demo_index):
    return ProductSearch(docs, local_embedder, demo_index)




@pytest.fixture
def pg_url():
    """A PostgreSQL URL (real server on 127.0.0.1:5432) whose connections use a schema of this test's own."""
    from tests.fakes.postgres import own_schema

    with own_schema() as (_, url):
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def audit_target(request, tmp_path):
    """Where an audit store lives, once for each kind: a SQLite file, and a PostgreSQL schema of this test's
    own (db.audit_store.open_store opens either)."""
    from db.audit_store import DatabaseUrl

    if request.param == "sqlite":
        return tmp_path / "audit.db"
    return DatabaseUrl(request.getfixturevalue("pg_url"))


@pytest.fixture
async def redis():
    """A real Redis connection and a key prefix of this test's own, cleaned afterwards."""
    from tests.fakes.redis_support import connect, drop_prefix, unique_prefix

    client = await connect()
    prefix = unique_prefix()
    client.test_prefix = prefix
    try:
        yield client
    finally:
        await drop_prefix(client, prefix)
        await client.aclose()


@pytest.fixture
async def redis_alone(tmp_path):
    """Like `redis`, on a redis-server of this test's own (started in a fraction of a second): for a test
    that does what would disturb the tests sharing a Redis under xdist (SCRIPT FLUSH, CLIENT PAUSE)."""
    from tests.fakes.redis_server import RedisServer
    from tests.fakes.redis_support import unique_prefix

    server = await RedisServer(tmp_path).start()
    client = server.client()
    client.test_prefix = unique_prefix()
    try:
        yield client
    finally:
        await client.aclose()
        await server.stop()


@pytest.fixture
async def world(tmp_path):
    """A fake Bot API server, a factory of real `python bot.py` processes polling it (with real Redis
    under a prefix of this test's own), and the working directory; every process is killed afterwards.
    The working directory starts with a copy of the demo catalog and index built once per run (what the
    first process would otherwise build), so the processes start in seconds."""
    from tests.fakes import prebuilt
    from tests.fakes.bot_process import BotProcess
    from tests.fakes.redis_support import connect, drop_prefix, unique_prefix
    from tests.fakes.telegram_server import FakeTelegram

    await asyncio.to_thread(prebuilt.demo_data, tmp_path / "data")
    fake = await FakeTelegram().start()
    redis = await connect()
    prefix = unique_prefix()
    bots: list[BotProcess] = []

    def bot(*args: str, **env: str) -> BotProcess:
        process = BotProcess(fake, tmp_path, prefix, *args, **env)
        bots.append(process)
        return process

    try:
        yield fake, bot, tmp_path
    finally:
        for process in bots:
            await process.kill()
        await drop_prefix(redis, prefix)
        await redis.aclose()
        await fake.stop()

