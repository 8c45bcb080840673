"""Shared fixtures: a demo catalog file built once per session, opened read-only per test."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from db.build import write_catalog
from db.connection import open_readonly
from db.records import demo_catalog
from retrieval.documents import doc_from_product
from retrieval.embedders import LocalE5Embedder
from retrieval.index import VectorIndex, build_index
from retrieval.search import ProductSearch
from tests.fakes.demo import DEMO_DAY

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("catalog") / "shop.db"
    write_catalog(path, demo_catalog(DEMO_DAY), source="demo")
    return path


@pytest.fixture
async def conn(demo_db):
    connection = await open_readonly(demo_db)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def docs():
    return [doc_from_product(p.__dict__) for p in demo_catalog(DEMO_DAY).products]


@pytest.fixture(scope="session")
def local_embedder():
    return LocalE5Embedder()


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory, docs, local_embedder):
    path = tmp_path_factory.mktemp("index") / "shop.index"
    asyncio.run(build_index(path, docs, local_embedder, progress=False))
    return VectorIndex.load(path, local_embedder.name)


@pytest.fixture(scope="session")
def search(docs, local_embedder, demo_index):
    return ProductSearch(docs, local_embedder, demo_index)




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
async def world(tmp_path):
    """A fake Bot API server, a factory of real `python bot.py` processes polling it (with real Redis
    under a prefix of this test's own), and the working directory; every process is killed afterwards."""
    from tests.fakes.bot_process import BotProcess
    from tests.fakes.redis_support import connect, drop_prefix, unique_prefix
    from tests.fakes.telegram_server import FakeTelegram

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

