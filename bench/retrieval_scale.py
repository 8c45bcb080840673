"""Retrieval at scale (issue 24), in one run: the dense side exact vs ANN at sizes up to a million (latency,
recall@10 against exact search on the same vectors, start-up, graph build), the memory of 1 and 4 worker
processes opening the same generation (Pss from /proc), the whole search at 20k exact vs ANN, an
incremental update, and index build throughput (local model and a remote endpoint, before and after).

    python bench/retrieval_scale.py --sample A.index B.index [--sizes 1000 5000 20000 1000000]

`--sample`: built indexes whose real vectors are the sample (the demo and outdoor catalogs' indexes);
larger catalogs are near-duplicates of it (bench/scale_vectors.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scale_vectors import exact_top, near_duplicates, queries, real_sample, recall  # noqa: E402
from retrieval import ann  # noqa: E402
from retrieval.embedders import LocalE5Embedder  # noqa: E402

MODEL = LocalE5Embedder.name


def pct(values, q) -> float:
    return float(np.percentile(values, q))


def ids_for(size: int) -> list[str]:
    return [f"S{i:07d}" for i in range(size)]


def dense_side(size: int, views: np.ndarray, names: np.ndarray, qs: np.ndarray, tmp: Path) -> dict:
    """Exact scan vs the ANN generation for the dense signals of one query."""
    v, n = near_duplicates(views, names, size, seed=size)
    ids = ids_for(size)
    path = tmp / f"s{size}.index"
    t = time.perf_counter()
    ann.publish(path, ids, [f"h{i}" for i in range(size)], v, n, MODEL, threads=2)
    build = time.perf_counter() - t
    t = time.perf_counter()
    generation = ann.Generation.open(path)
    dense = ann.ApproximateDense(generation, ids)
    startup = time.perf_counter() - t
    rank = (v[:, 0].astype(np.float32) + v[:, 1]) / 2     # exact on the same (float16) vectors
    truth = exact_top(rank, qs)
    lexical = np.random.default_rng(3).integers(0, size, (len(qs), ann.LEXICAL_CANDIDATES))
    found, ann_ms = [], []
    for q, lex in zip(qs, lexical, strict=True):
        t = time.perf_counter()
        z, _, _ = dense.signals(q, lex, 64)
        ann_ms.append((time.perf_counter() - t) * 1000)
        found.append(np.argsort(-z, kind="stable")[:10])
    # the exact path scores four full matrices (ranking, document, name+usage, name) in float32; at a million
    # only the ranking one is held (6 GB for four) and its time is multiplied by four
    full = size <= 200_000
    matrices = [rank, v[:, 0].astype(np.float32), v[:, 1].astype(np.float32), n.astype(np.float32)] if full else [rank]
    exact_ms = []
    for q in qs[:30]:
        t = time.perf_counter()
        for m in matrices:
            m @ q
        exact_ms.append((time.perf_counter() - t) * 1000 * (1 if full else 4))
    files = sum(p.stat().st_size for p in tmp.glob(f"s{size}.index.g*"))
    return {"size": size, "ann_p50": statistics.median(ann_ms), "ann_p95": pct(ann_ms, 95),
            "exact_p50": statistics.median(exact_ms), "exact_p95": pct(exact_ms, 95),
            "exact_measured": "4 views" if full else "1 view ×4", "recall10": recall(found, truth),
            "graph_build_s": build, "graph_build_per_s": size / build, "startup_s": startup,
            "files_mb": files / 1e6, "path": str(path)}


WORKER = """
import sys, json, numpy as np
sys.path.insert(0, {root!r})
from threadpoolctl import threadpool_limits
threadpool_limits(limits=1, user_api="blas")
from retrieval import ann
path = {path!r}
g = ann.Generation.open(__import__('pathlib').Path(path))
d = ann.ApproximateDense(g, g.ids)
rng = np.random.default_rng(0)
for _ in range(20):
    q = rng.normal(size=g.dimensions).astype(np.float32); q /= np.linalg.norm(q)
    d.signals(q, rng.integers(0, g.size, 256), 64)
for start in range(0, g.size, 100000):          # every vector page read once: the whole file resident
    np.asarray(g.vectors[start:start + 100000], dtype=np.float32).sum()
g.graph.search(np.asarray(g.vectors[:2000, 0], dtype=np.float32), 10)
print("ready", flush=True)
sys.stdin.readline()
"""


def _memory(pid: int, marker: str) -> dict:
    """Pss/Rss of the whole process and of the mappings of the generation's files (kB → MB)."""
    total = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, *rest = line.split()
        if key in ("Rss:", "Pss:"):
            total[key[:-1]] = int(rest[0]) / 1024
    vectors = {"Rss": 0.0, "Pss": 0.0}
    inside = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and "-" in parts[0] and not parts[0].endswith(":"):   # a mapping's header line
            inside = marker in line
        elif inside and parts and parts[0] in ("Rss:", "Pss:"):
            vectors[parts[0][:-1]] += int(parts[1]) / 1024
    return {"rss": total["Rss"], "pss": total["Pss"], "vec_rss": vectors["Rss"], "vec_pss": vectors["Pss"]}


def workers_memory(path: str, count: int) -> list[dict]:
    """Start `count` processes that each open the generation and read all of it; their memory while all live."""
    code = WORKER.format(root=str(ROOT), path=path)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(count)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        marker = Path(path).name + ".g"
        return [_memory(p.pid, marker) for p in procs]
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=60)


def memory_rows(path: str) -> dict:
    one = workers_memory(path, 1)[0]
    four = workers_memory(path, 4)
    return {"one": one, "four_vec_pss": sum(w["vec_pss"] for w in four), "four_pss": sum(w["pss"] for w in four),
            "four_vec_rss": sum(w["vec_rss"] for w in four)}


def synthetic_docs(size: int) -> list:
    """The synthetic catalog of bench/retrieval.py (the demo's products under variant names) as documents."""
    from bench.retrieval import synthetic_catalog
    from retrieval.documents import doc_from_product

    return [doc_from_product(p.__dict__) for p in synthetic_catalog(size)]


def whole_generation(size: int, docs: list, views: np.ndarray, names: np.ndarray, cache: Path) -> float:
    """The catalog's ANN generation in `cache` (published unless it is already current there): seconds spent."""
    path = cache / f"whole{size}.index"
    ids, hashes = [d.product_id for d in docs], [d.content_hash for d in docs]
    if ann.is_current(path, ids, hashes):
        return 0.0
    v, n = near_duplicates(views, names, size, seed=5)
    t = time.perf_counter()
    ann.publish(path, ids, hashes, v, n, MODEL, threads=2)
    return time.perf_counter() - t


async def profile_signals(search, queries: list[str], top: int, passes: int = 3) -> str:
    """Where one search's time goes: cProfile of ProductSearch._signals (the per-query work the search runs in
    a worker thread, so a profile of `search` itself sees only the event loop), dense side after the lexical
    side, over `queries` `passes` times, the `top` functions by own time."""
    import cProfile
    import io
    import pstats

    import retrieval.search as search_module

    calls = []
    for q in queries:   # the inputs _rank hands _signals, computed before the profile
        meant, unknown = await search._read(q)
        calls.append((q, await search.query_vector(meant), await search._word_vectors(unknown)))
    search_module.DENSE_BESIDE_LEXICAL = False
    profile = cProfile.Profile()
    try:
        profile.enable()
        for _ in range(passes):
            for call in calls:
                search._signals(*call)
        profile.disable()
    finally:
        search_module.DENSE_BESIDE_LEXICAL = True
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(top)
    return f"{len(calls) * passes} searches (tottime and cumtime in seconds over all of them)\n{out.getvalue()}"


async def whole_search(size: int, views: np.ndarray, names: np.ndarray, cache: Path, count: int,
                       full_count: int, warm_count: int, profile: int = 0) -> dict:
    """ProductSearch.search over the synthetic catalog served from its ANN generation, as a worker holds it:
    start-up (the generation opened, the lexical index and the name tables built), the worker's memory beyond
    the shared files, and p50/p95 with cached query vectors — the candidates ranked (now) and every product
    ranked (before, the same search with the candidate switch off), same run; `profile`: that many functions
    of a profile of the timed queries (profile_signals)."""
    import retrieval.search as search_module
    from bench.retrieval import rss_bytes
    from db.records import demo_catalog
    from retrieval.evaluation import load_queries
    from retrieval.search import ProductSearch

    demo_catalog()
    before_docs = rss_bytes()
    docs = synthetic_docs(size)
    docs_mb = (rss_bytes() - before_docs) / 1e6
    publish_s = whole_generation(size, docs, views, names, cache)
    embedder = LocalE5Embedder()
    shipped = [q.query for q in load_queries(ROOT / "retrieval/evalsets/demo_queries.jsonl")]
    qtexts = shipped[:count]
    # other queries, searched before any is timed: a worker that has served traffic (its graph pages mapped, its
    # per-word caches filled), without the timed queries' own results cached (a first pass after start-up was
    # 2× the later ones at 1M: the graph's pages are mapped as queries first reach them)
    warm = list(dict.fromkeys(shipped[count:] + [q.query for q in load_queries(
        ROOT / "retrieval/evalsets/queries-demo.jsonl") if q.split == "train"]))[:warm_count]
    embedder.encode(qtexts[:1], True)   # the model loaded before the start-up is timed
    before = rss_bytes()
    t = time.perf_counter()
    search = ProductSearch(docs, embedder, ann.Generation.open(cache / f"whole{size}.index"))
    startup = time.perf_counter() - t
    if search.warmed is not None:   # the tables read on a background thread after start-up, before any timing
        await asyncio.wrap_future(search.warmed)
    warmed = time.perf_counter() - t - startup
    memory = (rss_bytes() - before) / 1e6
    await search.prime(qtexts + warm)    # query vectors cached: the figure is the search itself
    for q in warm:
        await search.search(q, 5)

    async def timed(queries: list[str]) -> list[float]:
        times = []
        for q in queries:
            t = time.perf_counter()
            await search.search(q, 5)
            times.append((time.perf_counter() - t) * 1000)
        return times

    async def found(queries: list[str]) -> list[list[tuple[str, float]]]:
        return [[(c.product_id, round(c.retrieval_score, 4)) for c in await search.search(q, 5)] for q in queries]

    now = await timed(qtexts)
    found_now = await found(qtexts[:full_count])
    # the ANN neighbours searched beside the lexical side vs after it, interleaved query by query (the machine's
    # load moves both alike), and whether the two give the same candidates and scores
    orders = {True: [], False: []}
    same_orders = []
    for q in qtexts:
        seen = {}
        for beside in (True, False):
            search_module.DENSE_BESIDE_LEXICAL = beside
            t = time.perf_counter()
            got = await search.search(q, 5)
            orders[beside].append((time.perf_counter() - t) * 1000)
            seen[beside] = [(c.product_id, c.retrieval_score) for c in got]
        same_orders.append(seen[True] == seen[False])
    search_module.DENSE_BESIDE_LEXICAL = True
    threshold = search_module.ANN_THRESHOLD
    search_module.ANN_THRESHOLD = size + 1   # before: every product ranked (the ANN gives the dense side)
    try:
        full = await timed(qtexts[:full_count])
        found_full = await found(qtexts[:full_count])
    finally:
        search_module.ANN_THRESHOLD = threshold
    # the same first candidate (or both empty), the same candidates as a set, and the same scores (the synthetic
    # catalog's variants tie: another variant of equal score is as good an answer)
    pairs = list(zip(found_now, found_full, strict=True))
    first = np.mean([[i for i, _ in a[:1]] == [i for i, _ in b[:1]] for a, b in pairs])
    same = np.mean([{i for i, _ in a} == {i for i, _ in b} for a, b in pairs])
    same_scores = np.mean([sorted(s for _, s in a) == sorted(s for _, s in b) for a, b in pairs])
    return {"size": size, "publish_s": publish_s, "startup_s": startup, "warmed_s": warmed, "memory_mb": memory,
            "docs_mb": docs_mb, "rss_mb": rss_bytes() / 1e6, "now": (statistics.median(now), pct(now, 95)),
            "before": (statistics.median(full), pct(full, 95)), "queries": len(now), "full_queries": len(full),
            "warm_queries": len(warm), "same_first": float(first), "same_set": float(same),
            "same_scores": float(same_scores), "load": os.getloadavg()[0],
            "beside": (statistics.median(orders[True]), pct(orders[True], 95)),
            "after": (statistics.median(orders[False]), pct(orders[False], 95)),
            "same_beside_after": float(np.mean(same_orders)),
            "profile": await profile_signals(search, qtexts, profile) if profile else None}


def incremental(size: int, views: np.ndarray, names: np.ndarray, tmp: Path, share: float) -> dict:
    """Change `share` of the products, remove as many, add as many: the graph update vs a fresh build."""
    v, n = near_duplicates(views, names, size, seed=11)
    ids, hashes = ids_for(size), [f"h{i}" for i in range(size)]
    path = tmp / f"inc{size}.index"
    t = time.perf_counter()
    ann.publish(path, ids, hashes, v, n, MODEL, threads=2)
    fresh = time.perf_counter() - t
    k = int(size * share)
    rng = np.random.default_rng(2)
    v2, n2 = v.copy(), n.copy()
    changed = rng.choice(size - k, k, replace=False)
    v2[changed], n2[changed] = near_duplicates(views, names, k, seed=12)
    hashes2 = list(hashes)
    for i in changed:
        hashes2[i] = f"c{i}"
    new_v, new_n = near_duplicates(views, names, k, seed=13)
    ids2 = ids[:size - k] + [f"N{i:07d}" for i in range(k)]
    hashes2 = hashes2[:size - k] + [f"n{i}" for i in range(k)]
    v2 = np.concatenate([v2[:size - k], new_v])
    n2 = np.concatenate([n2[:size - k], new_n])
    t = time.perf_counter()
    report = ann.publish(path, ids2, hashes2, v2, n2, MODEL, threads=2)
    update = time.perf_counter() - t
    return {"size": size, "changed": k, "fresh_s": fresh, "update_s": update, "added": report.added,
            "removed": report.removed, "rebuilt": report.rebuilt}


def load_outdoor_docs() -> list:
    from retrieval.documents import doc_from_product
    from retrieval.evaluation import SHIPPED

    return [doc_from_product(r) for r in json.loads(SHIPPED["outdoor"][0].read_text())]


def _serve_slow_fake(latency: float, urls) -> None:
    """A child process: the fake OpenAI-compatible endpoint answering embeddings after `latency` s, its URL put
    on `urls`; it serves until it is terminated. Apart from the build it measures, so the endpoint's own work
    (JSON of every vector) is not done on the build's event loop, as a real endpoint's is not."""
    from tests.fakes.openai_server import FakeOpenAI

    class SlowFake(FakeOpenAI):
        async def _embeddings(self, request):
            await asyncio.sleep(latency)
            return await super()._embeddings(request)

    async def serve() -> None:
        fake = await SlowFake(dimensions=384).start()
        urls.put(fake.url)
        await asyncio.Event().wait()

    asyncio.run(serve())


async def build_throughput(docs: list, count: int, latency: float, remote_count: int) -> dict:
    """Products/s of build_index: the local model (`count` products), and a remote endpoint answering after
    `latency` s (`remote_count` products, the endpoint in a process of its own), same run: one request at a
    time (the original build), 4 and 8 requests in flight with the chunks embedded one after another (the
    build before chunks were pipelined), and 4 and 8 in flight with CHUNKS_IN_FLIGHT chunks at once (now)."""
    import multiprocessing

    from openai import AsyncOpenAI

    from retrieval.embedders import OpenAIEmbedder
    from retrieval.index import CHUNKS_IN_FLIGHT, build_index

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        local = LocalE5Embedder()
        local.encode(["预热"], False)
        t = time.perf_counter()
        await build_index(Path(tmp) / "local.index", docs[:count], local, progress=False)
        out["local"] = count / (time.perf_counter() - t)

        spawn = multiprocessing.get_context("spawn")
        urls = spawn.Queue()
        endpoint = spawn.Process(target=_serve_slow_fake, args=(latency, urls), daemon=True)
        endpoint.start()
        try:
            client = AsyncOpenAI(api_key="sk-bench", base_url=urls.get(timeout=60), timeout=30, max_retries=0)
            for label, concurrency, chunks in (("remote_sequential", 1, 1), ("remote_concurrent4_serial", 4, 1),
                                               ("remote_concurrent8_serial", 8, 1), ("remote_concurrent4", 4,
                                               CHUNKS_IN_FLIGHT), ("remote_concurrent8", 8, CHUNKS_IN_FLIGHT)):
                embedder = OpenAIEmbedder(client, "text-embedding-v3", 384, concurrency=concurrency)
                t = time.perf_counter()
                await build_index(Path(tmp) / f"{label}.index", docs[:remote_count], embedder, progress=False,
                                  chunks_in_flight=chunks)
                out[label] = remote_count / (time.perf_counter() - t)
            await client.close()
        finally:
            endpoint.terminate()
            endpoint.join()
    return out


def main(args) -> None:
    from threadpoolctl import threadpool_limits

    # as in the bot (retrieval/embedders.py pins BLAS to one thread): on two busy cores a multi-threaded BLAS
    # made a 5,000-row scan take 85 ms instead of 0.3
    threadpool_limits(limits=1, user_api="blas")
    if args.postings_read is not None:
        import retrieval.search as search_module
        search_module.POSTINGS_READ = args.postings_read or None
        print(f"each word's best {args.postings_read or 'every'} products touched (search.POSTINGS_READ)")
    views, names = real_sample([Path(p) for p in args.sample], MODEL)
    qs = queries(names, args.queries)
    print(f"sample: {len(views):,} real products (views and name vectors from {', '.join(args.sample)}); "
          f"{args.queries} queries (real name vectors + noise); cores: {os.cpu_count()}; "
          f"load average at start: {os.getloadavg()[0]:.1f}")
    results: dict = {"dense": [], "memory": {}, "whole": None, "incremental": None, "build": None}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmpname:
        tmp = Path(tmpname)
        print("\n## Dense side of one query: exact scan (float32) vs ANN (usearch float16 graph, 256 neighbours and "
              "256 lexical candidates rescored from float16)")
        print(f"{'products':>9s} {'exact p50':>9s} {'exact p95':>9s} {'ANN p50':>8s} {'ANN p95':>8s} {'recall@10':>9s} "
              f"{'graph build':>11s} {'build/s':>8s} {'open s':>7s} {'files MB':>8s}  exact measured")
        for size in args.sizes:
            r = dense_side(size, views, names, qs, tmp)
            results["dense"].append(r)
            print(f"{size:9,d} {r['exact_p50']:9.2f} {r['exact_p95']:9.2f} {r['ann_p50']:8.2f} {r['ann_p95']:8.2f} "
                  f"{r['recall10']:9.3f} {r['graph_build_s']:9.1f} s {r['graph_build_per_s']:8.0f} {r['startup_s']:7.2f} "
                  f"{r['files_mb']:8.0f}  {r['exact_measured']}", flush=True)
            if size in args.memory_sizes:
                m = memory_rows(r["path"])
                results["memory"][size] = m
                print(f"    memory, 1 worker: Pss {m['one']['pss']:.0f} MB (generation files {m['one']['vec_pss']:.0f} MB "
                      f"of Rss {m['one']['vec_rss']:.0f}); 4 workers: Pss {m['four_pss']:.0f} MB in all, generation files "
                      f"{m['four_vec_pss']:.0f} MB Pss (Rss summed {m['four_vec_rss']:.0f}) → "
                      f"{m['four_vec_pss'] / max(m['one']['vec_pss'], 1e-9):.2f}× one worker", flush=True)
            for p in tmp.glob(f"s{size}.index*"):
                p.unlink()
        if args.whole:
            cache = Path(args.whole_cache) if args.whole_cache else tmp
            cache.mkdir(parents=True, exist_ok=True)
            print("\n## Whole search (ProductSearch.search, cached query vectors) over the synthetic catalog served from "
                  "its ANN generation: candidates ranked (now) vs every product ranked (before), same run")
            print(f"{'products':>9s} {'now p50':>8s} {'now p95':>8s} {'before p50':>10s} {'before p95':>10s} "
                  f"{'same 1st':>8s} {'same top5':>9s} {'same scores':>11s} {'start-up':>8s} {'+RSS MB':>8s} {'docs MB':>8s} {'RSS MB':>7s} "
                  f"{'publish':>8s}")
            results["whole"] = []
            for size in args.whole:
                w = asyncio.run(whole_search(size, views, names, cache, args.whole_queries, args.full_queries,
                                           args.warm_queries, args.profile))
                results["whole"].append(w)
                print(f"{size:9,d} {w['now'][0]:8.1f} {w['now'][1]:8.1f} {w['before'][0]:10.1f} {w['before'][1]:10.1f} "
                      f"{w['same_first']:8.2f} {w['same_set']:9.2f} {w['same_scores']:11.2f} {w['startup_s']:6.1f} s {w['memory_mb']:8.0f} "
                      f"{w['docs_mb']:8.0f} {w['rss_mb']:7.0f} {w['publish_s']:6.0f} s", flush=True)
                print(f"          interleaved query by query, p50 / p95 ms: ANN neighbours beside the lexical side "
                      f"{w['beside'][0]:.1f} / {w['beside'][1]:.1f}, after it {w['after'][0]:.1f} / {w['after'][1]:.1f} "
                      f"(same candidates and scores: {w['same_beside_after']:.2f}); load average {w['load']:.1f}; "
                      f"background reading after start-up {w['warmed_s']:.1f} s",
                      flush=True)
                if w["profile"]:
                    print(f"          profile of ProductSearch._signals at {size:,}: {w['profile']}", flush=True)
            if len(results["whole"]) > 1:
                first, last = results["whole"][0], results["whole"][-1]
                print(f"p50 at {last['size']:,} / p50 at {first['size']:,}: now {last['now'][0] / first['now'][0]:.2f}×, "
                      f"before {last['before'][0] / first['before'][0]:.2f}×; interleaved: beside "
                      f"{last['beside'][0] / first['beside'][0]:.2f}×, after {last['after'][0] / first['after'][0]:.2f}×")
        if args.incremental:
            i = incremental(args.incremental, views, names, tmp, 0.01)
            results["incremental"] = i
            print(f"\n## Incremental update at {i['size']:,} products: {i['changed']} changed + {i['changed']} removed + "
                  f"{i['changed']} added → graph update {i['update_s']:.1f} s (added {i['added']}, removed {i['removed']}, "
                  f"rebuilt {i['rebuilt']}) vs fresh graph {i['fresh_s']:.1f} s", flush=True)
    if args.build:
        b = asyncio.run(build_throughput(load_outdoor_docs(), args.build, args.latency, args.build_remote))
        results["build"] = b
        base = b["remote_sequential"]
        print(f"\n## Index build, products/s (embedding included): local model {b['local']:.2f} "
              f"({args.build} outdoor products); remote endpoint answering after {args.latency * 1000:.0f} ms, "
              f"batches of 10, {args.build_remote} outdoor products: one request at a time (the original build) "
              f"{base:.1f}; chunks one after another, 4 in flight {b['remote_concurrent4_serial']:.1f} "
              f"({b['remote_concurrent4_serial'] / base:.1f}×), 8 in flight {b['remote_concurrent8_serial']:.1f} "
              f"({b['remote_concurrent8_serial'] / base:.1f}×); chunks pipelined (now), 4 in flight "
              f"{b['remote_concurrent4']:.1f} ({b['remote_concurrent4'] / base:.1f}×), 8 in flight "
              f"{b['remote_concurrent8']:.1f} ({b['remote_concurrent8'] / base:.1f}×)")
    if args.json:
        print(json.dumps(results, default=str))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", nargs="+", required=True)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 2000, 5000, 10000, 20000, 100000, 1000000])
    parser.add_argument("--memory-sizes", type=int, nargs="*", default=[20000, 1000000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--whole", type=int, nargs="*", default=[20000, 1000000],
                        help="catalog sizes of the whole-search comparison (none: skip)")
    parser.add_argument("--whole-queries", type=int, default=40)
    parser.add_argument("--warm-queries", type=int, default=300,
                        help="other queries searched before the timed ones (a worker that has served traffic)")
    parser.add_argument("--profile", type=int, default=0,
                        help="print this many functions of a profile of the whole search's timed queries (0: none)")
    parser.add_argument("--postings-read", type=int, default=None,
                        help="each word's best this many products touched at scale (default: search.POSTINGS_READ; "
                             "0: every product, as before)")
    parser.add_argument("--full-queries", type=int, default=20, help="queries ranked over every product (before)")
    parser.add_argument("--whole-cache", default=None,
                        help="folder keeping the whole-search generations between runs (a million takes ~20 min)")
    parser.add_argument("--incremental", type=int, default=100000)
    parser.add_argument("--build", type=int, default=32, help="products embedded by the local model (0: skip)")
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--build-remote", type=int, default=512, help="products embedded by the remote endpoint")
    parser.add_argument("--tmp", default=None)
    parser.add_argument("--json", action="store_true")
    main(parser.parse_args())
