"""Writes a validated Catalog to a SQLite file atomically: a crash never leaves a half-built catalog."""

from __future__ import annotations

import os
import sqlite3
import tempfile
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from db.records import Catalog
from db.schema import SCHEMA


def _money(value: Decimal | None) -> str | None:
    return None if value is None else format(value, "f")


def write_catalog(target: Path, catalog: Catalog, *, source: str) -> None:
    """Build the catalog in a temporary file beside `target`, then atomically replace `target`."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.executescript(SCHEMA)
            with conn:
                conn.executemany(
                    "INSERT INTO products (product_id, product_name, category, description, specifications, usage, "
                    "brand, price, stock_quantity, aliases) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(p.product_id, p.product_name, p.category, p.description, p.specifications, p.usage, p.brand,
                      _money(p.price), p.stock_quantity, "|".join(p.aliases)) for p in catalog.products])
                conn.executemany(
                    "INSERT INTO promotions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(x.promotion_id, x.product_id, x.promotion_text, x.discount_type, _money(x.discount_value),
                      x.minimum_quantity, _money(x.minimum_spend), x.extra_condition) for x in catalog.promotions])
                conn.executemany("INSERT INTO knowledge_docs VALUES (?, ?, ?)",
                                 [(d.doc_id, d.title, d.content) for d in catalog.knowledge])
                conn.executemany(
                    "INSERT INTO orders (order_id, user_id, product_id, quantity, total, status, region, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(o.order_id, o.user_id, o.product_id, o.quantity, _money(o.total), o.status, o.region,
                      o.created_at) for o in catalog.orders])
                conn.executemany("INSERT INTO catalog_meta VALUES (?, ?)", [
                    ("source", source),
                    ("built_at", datetime.now(UTC).isoformat(timespec="seconds")),
                ])
            violations = conn.execute("PRAGMA foreign_key_check").fetchall()
            if violations:
                raise sqlite3.IntegrityError(f"foreign key violations: {violations[:5]}")
        finally:
            conn.close()
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
