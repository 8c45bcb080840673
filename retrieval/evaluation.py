"""Retrieval evaluation in DESIGN.md's formats: Recall@1, Recall@3, MRR@10 overall and per kind, and
how often a query with nothing relevant got candidates anyway.

Recall@k here is the share of queries with at least one relevant product in the top k (with one
relevant product per query, the usual recall)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


class QueriesError(Exception):
    """The queries file has problems; each is listed with its line number."""


@dataclass(frozen=True)
class EvalQuery:
    query: str
    relevant: tuple[str, ...]
    kind: str


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
            queries.append(EvalQuery(query, tuple(str(r) for r in relevant), str(kind)))
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
