"""Normalizes product-id arguments before any SQL sees them."""

from __future__ import annotations

from collections.abc import Iterable

MAX_IDS = 10


def normalize_ids(raw: Iterable[object] | object, limit: int = MAX_IDS) -> list[str]:
    """Coerce ids to stripped strings, drop blanks, de-duplicate in order, keep at most `limit`."""
    items = [raw] if isinstance(raw, (str, int)) else list(raw or [])  # type: ignore[arg-type]
    seen: dict[str, None] = {}
    for item in items:
        if item is None or isinstance(item, bool):
            continue
        text = str(item).strip()
        if text and text not in seen:
            seen[text] = None
    return list(seen)[:limit]


def placeholders(n: int) -> str:
    return ", ".join("?" * n)
