"""The lexical side at a million products (issue 24): BM25 postings in memory (as retrieval/lexical.py
holds them) vs SQLite FTS5 over jieba-segmented names, on the same synthetic names — memory, build time,
query latency (top 256, what the search rescores), and whether both return the same best products.

    python bench/lexical_scale.py [--size 1000000] [--queries 200]
    python bench/lexical_scale.py --search 20000 1000000   # ProductSearch's own lexical side (issue 24)

Names: a real brand and a real product name from the demo and outdoor catalogs, a variant and a model
number (安踏 双人四季帐篷 轻量版 X123). Each piece is segmented by jieba once.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.retrieval import VARIANTS  # noqa: E402
from db.records import demo_catalog  # noqa: E402
from retrieval.evaluation import SHIPPED  # noqa: E402

K1, B = 1.2, 0.75


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def synthetic_names(size: int, seed: int = 0) -> tuple[list[list[str]], list[str]]:
    """(tokens per product, name per product)."""
    import jieba

    jieba.setLogLevel(60)
    rows = [p.__dict__ for p in demo_catalog().products] + json.loads(SHIPPED["outdoor"][0].read_text())
    brands = sorted({r["brand"] for r in rows if r.get("brand")})
    bases = sorted({r["product_name"].replace(r.get("brand") or "\0", "").strip() for r in rows})
    seg = {text: [w for w in jieba.lcut(text) if w.strip()] for text in brands + bases + VARIANTS}
    rng = np.random.default_rng(seed)
    b, n, v, m = (rng.integers(0, len(brands), size), rng.integers(0, len(bases), size),
                  rng.integers(0, len(VARIANTS), size), rng.integers(0, 5000, size))
    tokens, names = [], []
    for i in range(size):
        brand, base, variant, model = brands[b[i]], bases[n[i]], VARIANTS[v[i]], f"x{m[i]}"
        tokens.append(seg[brand] + seg[base] + seg[variant] + [model])
        names.append(f"{brand} {base} {variant} {model}")
    return tokens, names


def build_postings(tokens: list[list[str]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """BM25 postings as retrieval/lexical.py builds them (per token: product rows, weights)."""
    size = len(tokens)
    lengths = np.fromiter((len(t) for t in tokens), dtype=np.float32, count=size)
    avg = float(lengths.mean())
    df: Counter[str] = Counter(t for ts in tokens for t in set(ts))
    rows: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    for i, ts in enumerate(tokens):
        norm = K1 * (1 - B + B * lengths[i] / avg)
        for token, tf in Counter(ts).items():
            idf = math.log(1 + (size - df[token] + 0.5) / (df[token] + 0.5))
            rows[token][0].append(i)
            rows[token][1].append(idf * tf * (K1 + 1) / (tf + norm))
    return {t: (np.array(ix, dtype=np.int32), np.array(w, dtype=np.float32)) for t, (ix, w) in rows.items()}


def bm25_top(postings, size: int, query: list[str], k: int = 256) -> np.ndarray:
    hits = [postings[t] for t in set(query) if t in postings]
    if not hits:
        return np.zeros(0, dtype=np.int64)
    scores = np.bincount(np.concatenate([h[0] for h in hits]), weights=np.concatenate([h[1] for h in hits]),
                         minlength=size)
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def fts_build(path: Path, tokens: list[list[str]]) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE VIRTUAL TABLE names USING fts5(words, tokenize='unicode61 remove_diacritics 0')")
    with conn:
        conn.executemany("INSERT INTO names(rowid, words) VALUES (?, ?)",
                         ((i, " ".join(ts)) for i, ts in enumerate(tokens)))
    conn.execute("INSERT INTO names(names) VALUES ('optimize')")
    conn.commit()
    conn.close()


def fts_top(conn: sqlite3.Connection, query: list[str], k: int = 256) -> list[int]:
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(query))
    return [r[0] for r in conn.execute("SELECT rowid FROM names WHERE names MATCH ? ORDER BY bm25(names) LIMIT ?",
                                       (match, k))]


def search_side(size: int, count: int = 40, full_count: int = 20) -> None:
    """The lexical side of ProductSearch itself at `size` products (`ProductSearch(docs)` without vectors, the
    synthetic catalog of bench/retrieval.py): start-up, memory, and signals + ranker per query with the large
    catalog's candidates ranked (now) and every product ranked (before), same run."""
    import retrieval.search as search_module
    from bench.retrieval import synthetic_catalog
    from retrieval.documents import doc_from_product
    from retrieval.evaluation import load_queries
    from retrieval.search import ProductSearch

    demo_catalog()
    before = rss_mb()
    docs = [doc_from_product(p.__dict__) for p in synthetic_catalog(size)]
    docs_mb, before = rss_mb() - before, rss_mb()
    t = time.perf_counter()
    search = ProductSearch(docs)
    build, memory = time.perf_counter() - t, rss_mb() - before
    queries = [q.query for q in load_queries(ROOT / "retrieval/evalsets/demo_queries.jsonl")][:count]

    def timed(texts: list[str]) -> list[float]:
        for q in texts[:3]:
            search.fuse(search._signals(q, None, {}))
        out = []
        for q in texts:
            t = time.perf_counter()
            search.fuse(search._signals(q, None, {}))
            out.append((time.perf_counter() - t) * 1000)
        return out

    now = timed(queries)
    threshold, search_module.ANN_THRESHOLD = search_module.ANN_THRESHOLD, size + 1
    try:
        full = timed(queries[:full_count])
    finally:
        search_module.ANN_THRESHOLD = threshold
    print(f"ProductSearch lexical side, {size:,} products: docs +{docs_mb:.0f} MB; start-up {build:.0f} s, "
          f"+{memory:.0f} MB; signals + ranker p50 {statistics.median(now):.1f} ms p95 {np.percentile(now, 95):.1f} "
          f"(candidates) vs p50 {statistics.median(full):.1f} p95 {np.percentile(full, 95):.1f} (every product)")


def main(args) -> None:
    if args.search:
        for size in args.search:
            search_side(size)
        return
    t = time.perf_counter()
    tokens, names = synthetic_names(args.size)
    print(f"{args.size:,} synthetic names ({time.perf_counter() - t:.0f} s to make), e.g. {names[0]} / {names[1]}")
    rng = np.random.default_rng(9)
    picks = rng.integers(0, args.size, args.queries)
    # a query: two or three words of a product's name (its kind, its brand or a variant)
    queries = [list(rng.choice(tokens[i], min(len(tokens[i]), int(rng.integers(2, 4))), replace=False))
               for i in picks]

    gc.collect()
    before = rss_mb()
    t = time.perf_counter()
    postings = build_postings(tokens)
    build = time.perf_counter() - t
    gc.collect()
    memory = rss_mb() - before
    arrays = sum(ix.nbytes + w.nbytes for ix, w in postings.values()) / 1e6
    times, mem_top = [], []
    for q in queries:
        t = time.perf_counter()
        mem_top.append(bm25_top(postings, args.size, q))
        times.append((time.perf_counter() - t) * 1000)
    print(f"in-memory BM25: build {build:.0f} s, +RSS {memory:.0f} MB per worker process ({arrays:.0f} MB of it the "
          f"posting arrays), query p50 {statistics.median(times):.1f} ms, p95 "
          f"{np.percentile(times, 95):.1f} ms")
    del postings
    gc.collect()

    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        path = Path(tmp) / "names.db"
        t = time.perf_counter()
        fts_build(path, tokens)
        build = time.perf_counter() - t
        before = rss_mb()
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        times, same = [], []
        for q, mine in zip(queries, mem_top, strict=True):
            t = time.perf_counter()
            theirs = fts_top(conn, q)
            times.append((time.perf_counter() - t) * 1000)
            same.append(len(set(theirs[:10]) & set(mine[:10].tolist())) / 10 if len(mine) else 1.0)
        memory = rss_mb() - before
        print(f"SQLite FTS5: build {build:.0f} s, file {path.stat().st_size / 1e6:.0f} MB (shared through the page cache), "
              f"+RSS {memory:.0f} MB per process, query p50 {statistics.median(times):.1f} ms, p95 "
              f"{np.percentile(times, 95):.1f} ms; top-10 overlap with in-memory BM25 {np.mean(same):.2f} "
              f"(FTS5 scores whole rows with its own length normalisation; ties among near-identical names differ)")
        conn.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--tmp", default=None)
    parser.add_argument("--search", type=int, nargs="*", help="measure ProductSearch's lexical side at these sizes")
    main(parser.parse_args())
