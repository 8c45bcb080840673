"""Choose the ANN engine by measurement: usearch (int8, float16), hnswlib (float32) and faiss-cpu (HNSW over
8-bit scalar-quantized and flat vectors) on the same near-duplicate vectors, recall@10 against exact search,
p50 latency of one query, build time on both cores, index size, and whether a worker can memory-map it.

    python bench/ann_engines.py --sample /tmp/kefu-index-cache/*.index [--size 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scale_vectors import exact_top, near_duplicates, queries, real_sample, recall  # noqa: E402
from retrieval.embedders import LocalE5Embedder  # noqa: E402

M, EF_ADD = 16, 128


def timed_search(search, qs: np.ndarray) -> tuple[list[np.ndarray], float]:
    found, times = [], []
    for q in qs:
        t = time.perf_counter()
        found.append(np.asarray(search(q)))
        times.append((time.perf_counter() - t) * 1000)
    return found, statistics.median(times)


def usearch_engine(rank, dtype, tmp, rescore: int = 0):
    from usearch.index import Index

    index = Index(ndim=rank.shape[1], metric="ip", dtype=dtype, connectivity=M, expansion_add=EF_ADD)
    t = time.perf_counter()
    index.add(np.arange(len(rank), dtype=np.uint64), rank, threads=2)
    build = time.perf_counter() - t
    path = Path(tmp) / f"u-{dtype}.usearch"
    index.save(str(path))
    viewed = Index.restore(str(path), view=True)

    exact = rank.astype(np.float16)   # the float16 rows the bot rescores (retrieval/ann.py)

    def rescored(q):
        keys = viewed.search(q, rescore).keys.astype(np.int64)
        return keys[np.argsort(-(exact[keys].astype(np.float32) @ q))][:10]

    def run(ef):
        viewed.expansion_search = ef
        return rescored if rescore else lambda q: viewed.search(q, 10).keys
    return build, path.stat().st_size, "yes (Index.restore(view=True))", run


def hnswlib_engine(rank, tmp):
    import hnswlib

    index = hnswlib.Index(space="ip", dim=rank.shape[1])
    index.init_index(max_elements=len(rank), M=M, ef_construction=EF_ADD)
    index.set_num_threads(2)
    t = time.perf_counter()
    index.add_items(rank, np.arange(len(rank)))
    build = time.perf_counter() - t
    path = Path(tmp) / "h.bin"
    index.save_index(str(path))
    index.set_num_threads(1)

    def run(ef):
        index.set_ef(ef)
        return lambda q: index.knn_query(q, 10)[0][0]
    return build, path.stat().st_size, "no (load_index reads it into each process)", run


def faiss_engine(rank, tmp, quantized: bool):
    import faiss

    faiss.omp_set_num_threads(2)
    d = rank.shape[1]
    index = (faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_8bit, M, faiss.METRIC_INNER_PRODUCT) if quantized
             else faiss.IndexHNSWFlat(d, M, faiss.METRIC_INNER_PRODUCT))
    index.hnsw.efConstruction = EF_ADD
    t = time.perf_counter()
    if quantized:
        index.train(rank)
    index.add(rank)
    build = time.perf_counter() - t
    path = Path(tmp) / "f.faiss"
    faiss.write_index(index, str(path))
    faiss.omp_set_num_threads(1)

    def run(ef):
        index.hnsw.efSearch = ef
        return lambda q: index.search(q[None, :], 10)[1][0]
    return build, path.stat().st_size, "no for HNSW (IO_FLAG_MMAP maps inverted lists only)", run


def main(args) -> None:
    views, names = real_sample([Path(p) for p in args.sample], LocalE5Embedder.name)
    v, _ = near_duplicates(views, names, args.size)
    rank = ((v[:, 0].astype(np.float32) + v[:, 1]) / 2)
    qs = queries(names, args.queries)
    truth = exact_top(rank, qs)
    t = time.perf_counter()
    for q in qs[:50]:
        s = rank @ q
        np.argpartition(-s, 9)[:10]
    exact_ms = (time.perf_counter() - t) / 50 * 1000
    print(f"{args.size:,} vectors (near-duplicates of {len(views):,} real products), {args.queries} queries; "
          f"exact float32 scan p50-ish {exact_ms:.1f} ms")
    print(f"{'engine':28s} {'build s':>8s} {'size MB':>8s} {'ef':>4s} {'recall@10':>9s} {'p50 ms':>7s}  mmap")
    with tempfile.TemporaryDirectory() as tmp:
        engines = [("usearch i8", lambda: usearch_engine(rank, "i8", tmp)),
                   ("usearch i8 + rescore 64 f16", lambda: usearch_engine(rank, "i8", tmp, 64)),
                   ("usearch i8 + rescore 256 f16", lambda: usearch_engine(rank, "i8", tmp, 256)),
                   ("usearch f16", lambda: usearch_engine(rank, "f16", tmp)),
                   ("hnswlib f32", lambda: hnswlib_engine(rank, tmp)),
                   ("faiss HNSW SQ8", lambda: faiss_engine(rank, tmp, True)),
                   ("faiss HNSW flat", lambda: faiss_engine(rank, tmp, False))]
        for name, make in engines:
            try:
                build, size, mmap, run = make()
            except ImportError as exc:
                print(f"{name:28s} not installed ({exc})")
                continue
            for ef in args.ef:
                found, p50 = timed_search(run(ef), qs)
                print(f"{name:28s} {build:8.1f} {size / 1e6:8.0f} {ef:4d} {recall(found, truth):9.3f} {p50:7.2f}  {mmap}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", nargs="+", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef", type=int, nargs="+", default=[64, 128, 384])
    main(parser.parse_args())
