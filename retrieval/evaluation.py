"""Retrieval evaluation in DESIGN.md's formats: Recall@1, Recall@3, MRR@10 overall and per kind, and
how often a query with nothing relevant got candidates anyway.

Recall@k here is the share of queries with at least one relevant product in the top k (with one
relevant product per query, the usual recall)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from db.build import write_catalog
from db.connection import open_readonly
from db.records import Catalog
from retrieval.documents import RetrievalDoc
from retrieval.embedders import Embedder
from retrieval.index import VectorIndex, build_index
from retrieval.search import ProductSearch
from retrieval.service import catalog_docs


class QueriesError(Exception):
    """The queries file has problems; each is listed with its line number."""


@dataclass(frozen=True)
class EvalQuery:
    query: str
    relevant: tuple[str, ...]
    kind: str
    split: str = ""   # "train" or "test" (Wave 3: the test split is frozen); "" in older sets


def load_queries(path: Path) -> list[EvalQuery]:
    problems, queries = [], []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QueriesError(f"{path}: cannot be read ({exc})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            query, relevant, kind = row["query"], row["relevant"], row.get("kind", "all")
            if not isinstance(query, str) or not query.strip() or not isinstance(relevant, list):
                raise TypeError
            queries.append(EvalQuery(query, tuple(str(r) for r in relevant), str(kind), str(row.get("split", ""))))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            problems.append(f"{path.name} line {number}: expected {{\"query\": str, \"relevant\": [ids], \"kind\": str}}")
    if problems:
        raise QueriesError("\n".join(problems))
    if not queries:
        raise QueriesError(f"{path}: no queries")
    return queries


Retriever = Callable[[str], Awaitable[Sequence[str]]]


def _metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "recall@1": round(sum(1 for r in ranks if r is not None and r < 1) / n, 4),
        "recall@3": round(sum(1 for r in ranks if r is not None and r < 3) / n, 4),
        "mrr@10": round(sum(1 / (r + 1) for r in ranks if r is not None and r < 10) / n, 4),
        "count": len(ranks),
    }


async def evaluate(retrieve: Retriever, queries: Sequence[EvalQuery]) -> dict:
    """Run `retrieve` (query → ranked product ids) over the queries and score it."""
    ranks: list[int | None] = []
    by_kind: dict[str, list[int | None]] = defaultdict(list)
    empty_total = empty_returned = 0
    misses = []
    for q in queries:
        ids = list(await retrieve(q.query))[:10]
        if not q.relevant:
            empty_total += 1
            empty_returned += bool(ids)
            if ids:
                misses.append({"query": q.query, "kind": q.kind, "returned": ids[:3]})
            continue
        rank = next((i for i, pid in enumerate(ids) if pid in q.relevant), None)
        ranks.append(rank)
        by_kind[q.kind].append(rank)
        if rank is None or rank >= 3:
            misses.append({"query": q.query, "kind": q.kind, "relevant": list(q.relevant), "returned": ids[:3]})
    return {
        "overall": _metrics(ranks),
        "by_kind": {kind: _metrics(r) for kind, r in sorted(by_kind.items())},
        "empty": {"count": empty_total,
                  "returned_candidates": round(empty_returned / empty_total, 4) if empty_total else 0.0},
        "misses": misses,
    }


def format_report(report: dict, title: str = "retrieval") -> str:
    lines = [f"{title}: {report['overall']['count']} queries with relevant products, "
             f"{report['empty']['count']} with none",
             f"{'kind':12s} {'n':>4s} {'Recall@1':>9s} {'Recall@3':>9s} {'MRR@10':>7s}"]
    rows = [("overall", report["overall"])] + list(report["by_kind"].items())
    for kind, m in rows:
        lines.append(f"{kind:12s} {m['count']:4d} {m['recall@1']:9.3f} {m['recall@3']:9.3f} {m['mrr@10']:7.3f}")
    empty = report["empty"]
    if empty["count"]:
        lines.append(f"nothing relevant: {empty['count']} queries, returned candidates for "
                     f"{empty['returned_candidates']:.1%} (returned nothing for {1 - empty['returned_candidates']:.1%})")
    return "\n".join(lines)


EVALSETS = Path(__file__).resolve().parent / "evalsets"
# The shipped held-out sets: a catalog name → (catalog JSON or None for the demo catalog, its queries).
SHIPPED = {"demo": (None, EVALSETS / "queries-demo.jsonl"),
           "outdoor": (EVALSETS / "catalog-outdoor.json", EVALSETS / "queries-outdoor.jsonl")}


def index_cache_dir() -> Path:
    """Where evaluation runs keep the indexes they build (KEFU_INDEX_CACHE, else the system temp folder):
    embedding a 2,000-product catalog with the local model takes minutes, so a rerun reuses it."""
    return Path(os.environ.get("KEFU_INDEX_CACHE") or Path(tempfile.gettempdir()) / "kefu-index-cache")


def cached_index_path(docs: Sequence[RetrievalDoc], model: str, cache_dir: Path | None = None) -> Path:
    """The cached index for this catalog (its product ids) and model. The build is incremental by each
    document's hash (and adds what an index of the previous recipe lacks), so a change re-embeds only what
    changed."""
    key = hashlib.sha256("\x1f".join([model, *sorted(d.product_id for d in docs)]).encode()).hexdigest()
    return (cache_dir or index_cache_dir()) / f"{key[:20]}.index"


async def open_search(catalog: Catalog, embedder: Embedder | None, *, progress: bool = False) -> ProductSearch:
    """A search over `catalog` as the bot would hold it (written to a temporary SQLite file and read
    back), with its vectors from the index cache (built or updated there first)."""
    with tempfile.TemporaryDirectory(prefix="kefu-eval-") as tmp:
        db_path = Path(tmp) / "catalog.db"
        await asyncio.to_thread(write_catalog, db_path, catalog, source="eval")
        conn = await open_readonly(db_path)
        try:
            docs = await catalog_docs(conn)
        finally:
            await conn.close()
    if embedder is None:
        return await asyncio.to_thread(ProductSearch, docs)
    path = cached_index_path(docs, embedder.name)
    await build_index(path, docs, embedder, progress=progress)
    index = await asyncio.to_thread(VectorIndex.load, path, embedder.name)
    return await asyncio.to_thread(ProductSearch, docs, embedder, index)


def by_split(queries: Sequence[EvalQuery], split: str) -> dict[str, list[EvalQuery]]:
    """`each`: one list per split the set has (train first); `train`/`test`: that split; `all`: every query."""
    if split == "all" or not any(q.split for q in queries):
        return {"all": list(queries)}
    if split == "each":
        return {s: [q for q in queries if q.split == s] for s in sorted({q.split for q in queries}, key=_split_order)}
    return {split: [q for q in queries if q.split == split]}


def _split_order(split: str) -> tuple[int, str]:
    return ({"train": 0, "test": 1}.get(split, 2), split)
