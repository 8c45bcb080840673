"""Shared fixtures: a demo catalog file built once per session, opened read-only per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from db.build import write_catalog
from db.connection import open_readonly
from db.records import demo_catalog

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("catalog") / "shop.db"
    write_catalog(path, demo_catalog(), source="demo")
    return path


@pytest.fixture
async def conn(demo_db):
    connection = await open_readonly(demo_db)
    try:
        yield connection
    finally:
        await connection.close()
