"""The real PostgreSQL on 127.0.0.1:5432 (trust auth, database `test`; .ci/run makes sure it answers) in
schemas of each test's own, so tests running in parallel never see each other's rows."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

POSTGRES_TEST_URL = os.environ.get("KEFU_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _admin():
    import psycopg

    return psycopg.connect(POSTGRES_TEST_URL, autocommit=True, connect_timeout=5)


@contextmanager
def own_schema(base_url: str = POSTGRES_TEST_URL) -> Iterator[tuple[str, str]]:
    """A new schema, dropped afterwards with everything in it: (its name, a URL whose connections use it).
    A PostgreSQL that does not answer raises (the test fails; it is never skipped)."""
    schema = f"kefu_{uuid.uuid4().hex[:16]}"
    with _admin() as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    joiner = "&" if "?" in base_url else "?"
    try:
        yield schema, f"{base_url}{joiner}options=-csearch_path%3D{schema}"
    finally:
        with _admin() as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
