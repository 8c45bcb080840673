"""Opens the catalog the only way the bot may: read-only, by URI, with query_only on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite


class CatalogUnavailable(Exception):
    """The catalog file is missing or is not a kefu-bot catalog."""


async def open_readonly(path: Path | str) -> aiosqlite.Connection:
    """Open `path` with `mode=ro` and `PRAGMA query_only`; writes through it raise."""
    path = Path(path)
    if not path.is_file():
        raise CatalogUnavailable(f"catalog file not found: {path}")
    uri = path.resolve().as_uri() + "?mode=ro"
    conn = await aiosqlite.connect(uri, uri=True)
    try:
        conn.row_factory = sqlite3.Row
        await conn.execute("PRAGMA query_only = ON")
        await conn.execute("PRAGMA foreign_keys = ON")
        async with conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('products', 'promotions')"
        ) as cur:
            (found,) = await cur.fetchone()
        if found != 2:
            raise CatalogUnavailable(f"{path} is not a kefu-bot catalog (no products/promotions tables)")
    except sqlite3.DatabaseError as exc:
        await conn.close()
        raise CatalogUnavailable(f"{path} is not a readable SQLite catalog ({exc})") from None
    except BaseException:
        await conn.close()
        raise
    return conn
