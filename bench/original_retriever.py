"""The shop's original retriever, re-implemented for side-by-side measurement only (DESIGN.md appendix).

On every query: load all products from SQLite, read and parse the whole JSON vector index, embed the
query, pure-Python cosine against every stored vector, the character/bigram lexical score for every
product, 0.65·cosine + 0.35·lexical (lexical alone without an index), sort, top max(1, min(top_k, 10)).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path

_WS = re.compile(r"\s+")


def lexical_score(query: str, document: str) -> float:
    q = _WS.sub("", query.lower())
    d = _WS.sub("", document.lower())
    tokens = set(q) | {q[i:i + 2] for i in range(len(q) - 1)}
    if not tokens:
        return 0.0
    matched = sum(1 for t in tokens if t in d)
    return min(1.0, (matched + (2 if q and q in d else 0)) / len(tokens))


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def document_of(row: sqlite3.Row) -> str:
    return " ".join(str(row[k] or "") for k in ("product_name", "brand", "description", "specifications", "usage"))


def write_json_index(path: Path, ids: list[str], vectors) -> None:
    path.write_text(json.dumps({pid: [float(x) for x in vec] for pid, vec in zip(ids, vectors, strict=True)}))


class OriginalRetriever:
    def __init__(self, db_path: Path, index_path: Path | None, embed_query):
        self.db_path, self.index_path, self.embed_query = db_path, index_path, embed_query

    def search(self, query: str, top_k: int = 5) -> list[tuple[str, float]]:
        conn = sqlite3.connect(self.db_path)
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT * FROM products").fetchall()
        conn.close()
        vectors = None
        if self.index_path is not None and self.index_path.exists():
            vectors = json.loads(self.index_path.read_text())
        qvec = [float(x) for x in self.embed_query(query)] if vectors is not None else None
        scored = []
        for row in rows:
            lex = lexical_score(query, document_of(row))
            if vectors is not None and row["product_id"] in vectors:
                score = 0.65 * cosine(qvec, vectors[row["product_id"]]) + 0.35 * lex
            else:
                score = lex
            scored.append((row["product_id"], score))
        scored.sort(key=lambda x: -x[1])
        return scored[:max(1, min(top_k, 10))]
