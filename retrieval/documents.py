"""Retrieval documents: the words a product is found by. Never price or stock (they change and are
verified in SQL), so a price or stock change needs no re-index."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_PACK = re.compile(r"[（(][^）)]*[）)]")


# What is embedded per product: the whole document, and its name with what it is for (passages); and its
# bare name as a query (retrieval/index.py `names`: how close a customer's words are to what it is called). Ranking uses the
# mean of the two (measured on the shipped set: dense Recall@3 0.944 → 0.972, need 0.95 → 1.0); the
# confidence rule reads the document view alone, the one it was calibrated on.
RECIPE = "views(document, name+usage)+name"
PREVIOUS_RECIPE = "views(document, name+usage)"   # read as it is; the name vectors it lacks are added
VIEWS = 2


@dataclass(frozen=True)
class RetrievalDoc:
    product_id: str
    name: str
    brand: str
    text: str
    usage: str = ""
    aliases: tuple[str, ...] = ()   # other names (English, short names): matched as names, never embedded
    category: str = ""              # what kind of thing it is: lexical expansion only (not embedded, not hashed)

    @property
    def views(self) -> tuple[str, str]:
        """The texts embedded for this product: the whole document, and its name with what it is for."""
        return self.text, f"{self.name}，{self.usage}" if self.usage else self.name

    @property
    def base_name(self) -> str:
        """The name without its pack note: '乒乓球（10只装）' → '乒乓球'."""
        return _PACK.sub("", self.name).strip() or self.name

    @property
    def content_hash(self) -> str:
        return hashlib.sha256("\x1f".join(self.views).encode("utf-8")).hexdigest()[:16]


def doc_from_product(row: Mapping[str, Any]) -> RetrievalDoc:
    name, brand = str(row["product_name"]), str(row.get("brand") or "")
    parts = [f"{brand} {name}".strip(), row.get("description"), row.get("specifications"), row.get("usage")]
    text = "。".join(str(p).strip() for p in parts if p and str(p).strip())
    raw = row.get("aliases") or ""
    # the column as stored ('yoga mat|瑜伽毯'), or a record's tuple of names (db.records.Product)
    names = raw.split("|") if isinstance(raw, str) else [str(a) for a in raw]
    aliases = tuple(a.strip() for a in names if a.strip())
    return RetrievalDoc(str(row["product_id"]), name, brand, text, str(row.get("usage") or "").strip(), aliases,
                        str(row.get("category") or "").strip())
