"""Retrieval documents: the words a product is found by. Never price or stock (they change and are
verified in SQL), so a price or stock change needs no re-index."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_PACK = re.compile(r"[（(][^）)]*[）)]")


@dataclass(frozen=True)
class RetrievalDoc:
    product_id: str
    name: str
    brand: str
    text: str

    @property
    def base_name(self) -> str:
        """The name without its pack note: '乒乓球（10只装）' → '乒乓球'."""
        return _PACK.sub("", self.name).strip() or self.name

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]


def doc_from_product(row: Mapping[str, Any]) -> RetrievalDoc:
    name, brand = str(row["product_name"]), str(row.get("brand") or "")
    parts = [f"{brand} {name}".strip(), row.get("description"), row.get("specifications"), row.get("usage")]
    text = "。".join(str(p).strip() for p in parts if p and str(p).strip())
    return RetrievalDoc(str(row["product_id"]), name, brand, text)
