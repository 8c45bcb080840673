"""Retrieval at scale (issue 24): the ANN generation agrees with the exact scan, is updated product by product
without re-embedding what did not change, swaps atomically under a reader, and is memory-mapped."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from aiohttp import web
from openai import AsyncOpenAI

from retrieval import ann
from retrieval.embedders import OpenAIEmbedder
from retrieval.index import VectorIndex, build_index
from retrieval.search import ProductSearch
from retrieval.service import open_index
from tests.fakes.openai_server import FakeOpenAI, fake_vector


class HashEmbedder:
    """Deterministic vectors from each text's hash; counts every text it embeds."""

    name, dimensions = "test:hash", 32

    def __init__(self) -> None:
        self.embedded: list[str] = []

    async def embed_passages(self, texts):
        self.embedded += texts
        return np.array([fake_vector(t, self.dimensions) for t in texts], dtype=np.float32).reshape(-1, self.dimensions)

    embed_queries = embed_passages


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture
def vectors():
    rng = np.random.default_rng(7)
    n, d = 3000, 48
    return [f"P{i:05d}" for i in range(n)], unit(rng.normal(size=(n, 2, d))), unit(rng.normal(size=(n, d)))


def test_ann_top10_equals_exact_above_the_threshold(tmp_path, vectors):
    ids, views, names = vectors
    ann.publish(tmp_path / "c.index", ids, [f"h{i}" for i in range(len(ids))], views, names, "m")
    dense = ann.ApproximateDense(ann.Generation.open(tmp_path / "c.index"), ids)
    rank = (views[:, 0] + views[:, 1]) / 2
    rng = np.random.default_rng(1)
    agree = []
    for q in unit(names[rng.integers(0, len(ids), 40)] + rng.normal(0, 0.05, (40, names.shape[1]))):
        z, _, _ = dense.signals(q, np.zeros(0, dtype=np.int64), 64)
        exact = np.argsort(-(rank @ q))[:10]
        agree.append(len(set(np.argsort(-z)[:10]) & set(exact)) / 10)
    assert np.mean(agree) >= 0.98


def test_a_large_graph_is_searched_wider(tmp_path, vectors, monkeypatch):
    """From LARGE_GRAPH products on, a generation searches its graph with twice the breadth (ef): at 1M
    near-duplicate products ef 384 found 0.945-0.975 of the exact top 10 (bench/README)."""
    ids, views, names = vectors
    monkeypatch.setattr(ann, "LARGE_GRAPH", 1000)
    for size, ef in ((999, ann.EXPANSION_SEARCH), (1000, 2 * ann.EXPANSION_SEARCH)):
        path = tmp_path / f"g{size}.index"
        ann.publish(path, ids[:size], [f"h{i}" for i in range(size)], views[:size], names[:size], "m")
        assert ann.Generation.open(path).graph.expansion_search == ef


def test_a_graph_asked_for_all_it_holds_returns_every_row_best_first(tmp_path, vectors):
    """A small graph's approximate search can miss a node; asked for at least as many neighbours as it
    holds, the generation returns every row, ordered by the exact ranking view."""
    ids, views, names = vectors
    ids, views, names = list(ids[:60]), views[:60], names[:60]
    rank = (views[:, 0] + views[:, 1]) / 2
    rng = np.random.default_rng(3)
    queries = unit(names[rng.integers(0, len(ids), 50)] + rng.normal(0, 0.3, (50, names.shape[1])))
    for graph in range(8):   # each graph is built anew (in threads): a miss depends on the graph
        ann.publish(tmp_path / f"s{graph}.index", ids, [f"h{i}" for i in range(len(ids))], views, names, "m")
        generation = ann.Generation.open(tmp_path / f"s{graph}.index")
        for q in queries:
            rows = generation.nearest(q, 256)
            assert sorted(rows.tolist()) == list(range(len(ids)))
            scores = (rank @ q)[[ids.index(i) for i in np.asarray(generation.ids)[rows]]]
            assert np.all(np.diff(scores) <= 2e-3)   # best first (float16 vectors: ties within their precision)


async def test_search_over_the_ann_generation_matches_the_exact_search(tmp_path, docs):
    embedder = HashEmbedder()
    path = tmp_path / "shop.index"
    report = await build_index(path, docs, embedder, progress=False, ann_threshold=0)
    assert report.published is not None and report.published.rebuilt
    exact = ProductSearch(docs, embedder, VectorIndex.load(path, embedder.name))
    approximate = ProductSearch(docs, embedder, ann.Generation.open(path))
    for query in ["篮球", "跑步时装手机的小包", "瑜伽垫", "yoga mat", "羽毛球拍", "适合新手的帐篷"]:
        a, b = await exact.signals(query), await approximate.signals(query)
        # every demo product is a candidate here: the dense signals are the exact ones, in float16
        assert np.allclose(a.dense_z, b.dense_z, atol=0.02) and np.allclose(a.view_z[2], b.view_z[2], atol=0.02)
        assert [c.product_id for c in await exact.search(query)] == [c.product_id for c in await approximate.search(query)]
    assert await approximate.closeness("篮球", ["001"]) == pytest.approx(await exact.closeness("篮球", ["001"]), abs=0.02)


async def test_add_change_remove_update_the_generation_without_re_embedding_the_rest(tmp_path, docs):
    embedder = HashEmbedder()
    path = tmp_path / "shop.index"
    await build_index(path, docs[:-1], embedder, progress=False, ann_threshold=0)
    changed = replace(docs[0], text=docs[0].text + " 新款升级")
    added, removed = docs[-1], docs[1]
    catalog = [changed, *docs[2:]]
    embedder.embedded.clear()
    report = await build_index(path, catalog, embedder, progress=False, ann_threshold=0)
    # only the changed and the added product were embedded again (2 views and the name each)
    assert report.embedded == 2 and len(embedder.embedded) == 6
    assert set(embedder.embedded) == {*changed.views, changed.base_name, *added.views, added.base_name}
    assert report.published.generation == 2 and not report.published.rebuilt
    assert (report.published.added, report.published.removed) == (2, 2)

    generation = ann.Generation.open(path)
    assert removed.product_id not in generation.ids and generation.size == len(catalog)
    search = ProductSearch(catalog, embedder, generation)
    for doc in (changed, added):
        vector = (await embedder.embed_passages(list(doc.views))).mean(axis=0)
        assert generation.ids[generation.nearest(vector, 1)[0]] == doc.product_id
    assert removed.product_id not in {c.product_id for c in await search.search(removed.name, 10)}


def test_a_reader_keeps_its_generation_while_new_ones_are_published(tmp_path, vectors):
    ids, views, names = vectors
    path = tmp_path / "shop.index"
    hashes = [f"h{i}" for i in range(len(ids))]
    ann.publish(path, ids, hashes, views, names, "m")
    reader = ann.Generation.open(path)
    query = views[5].mean(axis=0)
    before = reader.nearest(query, 5).tolist()
    ann.publish(path, ids[:100], hashes[:100], views[:100], names[:100], "m")
    ann.publish(path, ids[:50], hashes[:50], views[:50], names[:50], "m")
    # generation 1's files are gone from the folder, its reader still searches and reads its vectors
    assert not list(tmp_path.glob("shop.index.g000001.*"))
    assert reader.nearest(query, 5).tolist() == before and reader.ids[before[0]] == ids[5]
    assert reader.exact(query, np.array([5]))[0, 0] == pytest.approx(float(views[5, 0] @ query), abs=1e-2)
    latest = ann.Generation.open(path)
    assert latest.generation == 3 and latest.size == 50
    assert ann.current_generation(path) == 3


def test_two_publishes_at_once_are_numbered_and_written_one_after_the_other(tmp_path, vectors):
    """Two builds publishing the same index at the same moment (two `build-index` runs, an import beside one):
    each takes its own generation number and writes its own files; the current one opens whole."""
    import threading

    ids, views, names = vectors
    half = len(ids) // 2
    sets = [(ids, [f"h{i}" for i in range(len(ids))], views, names),
            (ids[:half], [f"k{i}" for i in range(half)], views[:half], names[:half])]
    start, reports = threading.Barrier(2), []

    def build(which: int) -> None:
        chosen, hashes, v, n = sets[which]
        start.wait()
        reports.append((which, ann.publish(tmp_path / "c.index", chosen, hashes, v, n, "m")))

    threads = [threading.Thread(target=build, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(r.generation for _, r in reports) == [1, 2]            # never the same number twice
    last_which = max(reports, key=lambda r: r[1].generation)[0]
    current = ann.Generation.open(tmp_path / "c.index")
    assert current.generation == 2 and current.ids == list(sets[last_which][0])
    assert list(current.hashes) == list(sets[last_which][1])
    assert np.allclose(np.asarray(current.vectors[:, 2], dtype=np.float32), sets[last_which][3], atol=2e-3)


def test_the_generation_is_memory_mapped_from_its_files(tmp_path, vectors):
    ids, views, names = vectors
    path = tmp_path / "shop.index"
    ann.publish(path, ids, [f"h{i}" for i in range(len(ids))], views, names, "m")
    first, second = ann.Generation.open(path), ann.Generation.open(path)
    assert not first.vectors.flags.writeable and not first.vectors.flags.owndata
    maps = Path(f"/proc/{os.getpid()}/maps")
    if not maps.exists():
        pytest.skip("no /proc on this system")
    mapped = maps.read_text()
    for name in ("shop.index.g000001.vectors.npy", "shop.index.g000001.graph.usearch"):
        # file-backed mappings (shared through the page cache by every process that opens them), one per open
        assert mapped.count(name) >= 2, name
    assert second.nearest(views[0].mean(axis=0), 1).tolist() == [0]


def test_the_vectors_are_mapped_whole_at_open(tmp_path, vectors):
    """Every page of the vectors file is mapped when the generation opens (MAP_POPULATE), not when a query first
    reads its row: a page no process maps is evicted on this VM, and a query reading it waits for the disk."""
    ids, views, names = vectors
    path = tmp_path / "shop.index"
    ann.publish(path, ids, [f"h{i}" for i in range(len(ids))], views, names, "m")
    generation = ann.Generation.open(path)
    name = f"{path.name}.g000001.vectors.npy"
    resident, inside = 0, False
    for line in Path(f"/proc/{os.getpid()}/smaps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and "-" in parts[0] and not parts[0].endswith(":"):   # a mapping's header line
            inside = line.endswith(name)
        elif inside and parts[0] == "Rss:":
            resident += int(parts[1]) * 1024
    assert resident >= generation.vectors.nbytes
    assert np.array_equal(np.asarray(generation.vectors), np.load(tmp_path / name))


async def test_neighbours_searched_beside_the_lexical_side_give_the_same_signals(tmp_path, docs, monkeypatch):
    """A large catalog's ANN neighbours are searched on a second thread while the lexical side is computed; the
    candidates, every feature and the gate's inputs are the ones searched after it."""
    import retrieval.search as search_module

    embedder = HashEmbedder()
    path = tmp_path / "shop.index"
    await build_index(path, docs, embedder, progress=False, ann_threshold=0)
    search = ProductSearch(docs, embedder, ann.Generation.open(path))
    monkeypatch.setattr(search_module, "ANN_THRESHOLD", 1)
    for query in ["篮球", "跑步时装手机的小包", "yoga mat", "运动鞋", "无人机"]:
        got = {}
        for beside in (True, False):
            monkeypatch.setattr(search_module, "DENSE_BESIDE_LEXICAL", beside)
            s = await search.signals(query)
            got[beside] = (s.rows, s.features(), s.best_document_z, s.catalog_max)
        assert np.array_equal(got[True][0], got[False][0]) and np.array_equal(got[True][1], got[False][1])
        assert got[True][2:] == got[False][2:]


async def test_open_index_reads_the_generation_from_the_threshold_on(tmp_path, docs, monkeypatch):
    embedder = HashEmbedder()
    path = tmp_path / "shop.index"
    await build_index(path, docs, embedder, progress=False, ann_threshold=0)
    assert isinstance(open_index(path, embedder, len(docs)), VectorIndex)   # the demo stays exact
    monkeypatch.setattr(ann, "ANN_THRESHOLD", 10)
    assert isinstance(open_index(path, embedder, len(docs)), ann.Generation)


async def test_the_demo_catalog_publishes_no_generation(tmp_path, docs):
    report = await build_index(tmp_path / "shop.index", docs, HashEmbedder(), progress=False)
    assert report.published is None and ann.current_generation(tmp_path / "shop.index") is None


class SlowFake(FakeOpenAI):
    """The fake endpoint answering after a pause, counting requests in flight."""

    in_flight: int = 0
    most: int = 0

    async def _embeddings(self, request: web.Request) -> web.Response:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.05)
            return await super()._embeddings(request)
        finally:
            self.in_flight -= 1


async def test_remote_embedder_sends_batches_concurrently_in_order():
    fake = await SlowFake(dimensions=12).start()
    try:
        client = AsyncOpenAI(api_key="sk-test", base_url=fake.url, timeout=5, max_retries=0)
        embedder = OpenAIEmbedder(client, "text-embedding-v3", 12, batch_size=10, concurrency=3)
        texts = [f"商品{i}" for i in range(95)]
        vectors = await embedder.embed_passages(texts)
        await client.close()
    finally:
        await fake.stop()
    assert sorted(len(body["input"]) for _, body, _ in fake.requests) == [5] + [10] * 9
    assert 1 < fake.most <= 3
    assert np.allclose(vectors, np.array([fake_vector(t, 12) for t in texts]), atol=1e-5)


async def test_calls_made_at_once_share_the_requests_in_flight(tmp_path, docs):
    """An index build embeds several chunks at once; the endpoint still sees at most `concurrency` requests."""
    fake = await SlowFake(dimensions=12).start()
    try:
        client = AsyncOpenAI(api_key="sk-test", base_url=fake.url, timeout=5, max_retries=0)
        embedder = OpenAIEmbedder(client, "text-embedding-v3", 12, batch_size=10, concurrency=3)
        report = await build_index(tmp_path / "shop.index", docs, embedder, progress=False, chunk=8,
                                   ann_threshold=10**9)
        await client.close()
    finally:
        await fake.stop()
    assert report.embedded == len(docs) and 1 < fake.most <= 3
    index = VectorIndex.load(tmp_path / "shop.index", embedder.name)
    assert np.allclose(index.names, np.array([fake_vector(d.base_name, 12) for d in docs]), atol=1e-5)


async def test_a_build_publishes_when_the_generation_lags_the_index_and_only_then(tmp_path, docs):
    embedder = HashEmbedder()
    path = tmp_path / "shop.index"
    await build_index(path, docs, embedder, progress=False, ann_threshold=10**9)   # saved, not published
    embedder.embedded.clear()
    caught_up = await build_index(path, docs, embedder, progress=False, ann_threshold=0)
    assert caught_up.embedded == 0 and not embedder.embedded
    assert caught_up.published is not None and caught_up.published.generation == 1
    again = await build_index(path, docs, embedder, progress=False, ann_threshold=0)
    assert again.published is None and ann.current_generation(path) == 1


class GatedEmbedder(HashEmbedder):
    """Holds the embedding of one query until released: a search in flight."""

    def __init__(self, held: str) -> None:
        super().__init__()
        self.held, self.reached, self.release = held, asyncio.Event(), asyncio.Event()

    async def embed_queries(self, texts):
        if self.held in texts:
            self.reached.set()
            await self.release.wait()
        return await self.embed_passages(texts)


async def test_a_running_search_switches_to_a_newly_published_generation(tmp_path, docs):
    added = docs[-1]
    embedder = GatedEmbedder(held="在途的查询")
    path = tmp_path / "shop.index"
    await build_index(path, docs[:-1], embedder, progress=False, ann_threshold=0)
    catalog = list(docs[:-1])

    async def read_catalog():
        return list(catalog)

    search = ProductSearch(catalog, embedder, ann.Generation.open(path), catalog=read_catalog, refresh_seconds=0)
    assert added.product_id not in {c.product_id for c in await search.search(added.name, 10)}
    in_flight = asyncio.create_task(search.search("在途的查询", 10))
    await embedder.reached.wait()          # a search started on generation 1 and waits for its query vector
    catalog.append(added)
    await build_index(path, catalog, embedder, progress=False, ann_threshold=0)
    assert ann.current_generation(path) == 2
    await search.search("篮球")            # the next search looks for the newer generation (in the background)
    assert search.pending_refresh is not None and await search.pending_refresh is True
    embedder.release.set()
    old = await in_flight                  # finishes on generation 1's state
    assert added.product_id not in {c.product_id for c in old}
    found = await search.search(added.name, 10)
    assert found and found[0].product_id == added.product_id
    assert search._ann.generation.generation == 2 and len(search.docs) == len(docs)
    assert await search.refresh() is False   # nothing newer


async def test_ranking_only_the_candidates_changes_nothing_when_every_product_is_one(tmp_path, docs, monkeypatch):
    """A large catalog ranks its candidates only; over the demo catalog every product is a candidate (256 ANN
    neighbours), so with the threshold lowered the results, their scores and the gate's verdicts are the
    ones of the full ranking — the cut signals, the gate's catalog-wide maxima and the positions agree."""
    import retrieval.search as search_module

    embedder = HashEmbedder()
    path = tmp_path / "shop.index"
    await build_index(path, docs, embedder, progress=False, ann_threshold=0)
    searches = {"exact": ProductSearch(docs, embedder, VectorIndex.load(path, embedder.name)),
                "ann": ProductSearch(docs, embedder, ann.Generation.open(path)),
                "lexical": ProductSearch(docs)}
    queries = ["篮球", "跑步时装手机的小包", "瑜伽垫", "yoga mat", "兰球", "运动鞋", "篮球架", "高尔夫球杆", "李宁", "paobuxie"]

    async def results():
        # (ties are ordered by the partial sort, in no set order: compared by score, then id)
        return {(label, q): sorted((-round(c.retrieval_score, 5), c.product_id) for c in await s.search(q, 10))
                for label, s in searches.items() for q in queries}

    full = await results()
    monkeypatch.setattr(search_module, "ANN_THRESHOLD", 1)
    cut = await results()
    signals = await searches["ann"].signals("篮球")
    assert signals.rows is not None and len(signals.rows) == len(docs) == len(signals.features())
    # lexical only, a product that matches nothing is one candidate (the runner-up the gate reads), not all of them
    assert {k: v for k, v in cut.items() if k[0] != "lexical"} == {k: v for k, v in full.items() if k[0] != "lexical"}
    assert {k: v[:1] for k, v in cut.items()} == {k: v[:1] for k, v in full.items()}
    assert any(full[key] for key in full) and any(not full[key] for key in full)   # found and refused alike
    # touching only each word's best two products changes nothing either: every product is still a candidate (the
    # ANN's neighbours), and a candidate's lexical values are read exactly, not from the few products touched
    monkeypatch.setattr(search_module, "POSTINGS_READ", 2)
    few = await results()
    assert {k: v for k, v in few.items() if k[0] != "lexical"} == {k: v for k, v in full.items() if k[0] != "lexical"}


def test_lexical_arrays_over_the_touched_products_equal_the_catalog_wide_ones(docs):
    """A large catalog's BM25, name, brand and pinyin arrays are over the products the query's words touch: they
    hold every product the catalog-wide arrays score above 0, with the very same values (bit for bit: the sums
    are made in the same order)."""
    from retrieval.evaluation import SHIPPED, load_queries
    from retrieval.lexical import LexicalIndex
    from retrieval.synonyms import PinyinNames

    lexical = LexicalIndex(docs)
    pinyin = PinyinNames(lexical.size, lexical.spelling, lexical.name_piece)
    queries = [q.query for q in load_queries(SHIPPED["demo"][1])] + ["paobuxie", "yumaoqiupai 尤尼克斯", "兰球", ""]
    touched_some = 0
    for query in queries:
        spelled = pinyin.spelled(query)
        q = lexical.analyze(f"{query} {spelled}" if spelled else query)
        within = lexical.touched(q, pinyin.docs(query))
        assert np.array_equal(within.rows, np.unique(within.rows))
        pairs = [(lexical.bm25(q.tokens), lexical.bm25(q.tokens, within)),
                 (lexical.name_match(q), lexical.name_match(q, within)),
                 (lexical.brand_match(q), lexical.brand_match(q, within)),
                 (pinyin.match(query), pinyin.match(query, within))]
        for full, part in pairs:
            assert set(np.flatnonzero(full)) <= set(within.rows.tolist()), query
            assert np.array_equal(full[within.rows], part), query
            assert np.array_equal(within.at(part, np.arange(len(docs))), full), query
        touched_some += 0 < within.size < len(docs)
    assert touched_some > len(queries) // 2   # most queries touch some of the catalog, not all of it


def test_a_large_catalog_touches_each_words_best_products_and_reads_its_candidates_exactly(docs):
    """With `read`, a query touches only each posting list's best `read` products (a common word of a million
    products is not read whole), the arrays over that touch read those lists alone, and at_rows gives any
    products' BM25, name and brand matches exactly as the catalog-wide arrays hold them."""
    from retrieval.evaluation import SHIPPED, load_queries
    from retrieval.lexical import LexicalIndex
    from retrieval.touched import AllProducts

    lexical = LexicalIndex(docs)
    queries = [q.query for q in load_queries(SHIPPED["demo"][1])] + ["兰球", "yumaoqiupai 尤尼克斯", ""]
    rows = np.arange(len(docs))
    fewer = 0
    for query in queries:
        q = lexical.analyze(query)
        every, best = lexical.touched(q), lexical.touched(q, read=2)
        assert set(best.rows.tolist()) <= set(every.rows.tolist()), query
        fewer += best.size < every.size
        full = lexical.bm25(q.tokens)
        part = lexical.bm25(q.tokens, best)
        assert np.all(part <= full[best.rows] + 1e-6), query   # a touched product's lists, at most
        for t in set(q.tokens) & lexical.vocabulary:   # each word's best product is touched
            held, weights = lexical._postings[t]
            assert held[np.argmax(weights)] in best.rows, (query, t)
        assert set(np.flatnonzero(lexical.brand_match(q, best))) <= set(range(best.size)), query
        bm25, name, brand = lexical.at_rows(q, rows)
        assert np.array_equal(bm25, full), query
        assert np.array_equal(name, lexical.name_scores(q, AllProducts(len(docs)))), query
        assert np.array_equal(brand, lexical.brand_match(q)), query
        some = rows[::3]
        assert all(np.array_equal(a, b[::3]) for a, b in zip(lexical.at_rows(q, some), (bm25, name, brand),
                                                             strict=True)), query
    assert fewer > len(queries) // 3   # the rest touch two products or fewer per list anyway


def test_the_first_product_a_query_does_not_match_and_an_empty_touch():
    """The runner-up the gate reads for a query matching few products is the first product it does not match; a
    query that touches nothing reads 0 everywhere."""
    from retrieval.search import _first_missing
    from retrieval.touched import Touched

    assert _first_missing(np.array([0, 1, 2, 5]), 10).tolist() == [3]
    assert _first_missing(np.array([1, 2]), 10).tolist() == [0]
    assert _first_missing(np.array([], dtype=np.int64), 10).tolist() == [0]
    assert _first_missing(np.arange(10), 10).tolist() == []        # every product matched
    assert _first_missing(np.arange(4), 10).tolist() == [4]
    nothing = Touched(np.zeros(0, dtype=np.int64), np.zeros(10, dtype=np.int64))
    assert nothing.at(np.zeros(0, dtype=np.float32), np.array([0, 3, 9])).tolist() == [0.0, 0.0, 0.0]
    some = Touched(np.array([2, 5, 7]), np.zeros(10, dtype=np.int64))
    assert some.at(np.array([0.5, 0.25, 1.0], dtype=np.float32), np.array([0, 5, 7, 9])).tolist() == [0, 0.25, 1.0, 0]


def test_features_read_for_some_products_equal_the_full_arrays_cut(docs):
    """A large catalog reads token cover, head-noun/category and short-form matches for its candidates
    alone; each is the full per-product array cut to those rows."""
    from retrieval.lexical import LexicalIndex
    from retrieval.synonyms import ShortForms

    lexical, short_forms = LexicalIndex(docs), ShortForms(docs)
    rows = np.array(sorted(np.random.default_rng(3).choice(len(docs), 20, replace=False)))
    checked = 0
    for query in ["双人四季帐篷", "篮球", "跑鞋", "羽拍 训练", "瑜伽垫 防滑", "户外 登山鞋"]:
        q = lexical.analyze(query)
        words = lexical.content_words(q)
        assert np.array_equal(lexical.token_cover(q.tokens, rows), lexical.token_cover(q.tokens)[rows])
        for part, full in zip(lexical.kind_match(q, rows), lexical.kind_match(q), strict=True):
            assert np.array_equal(part, full[rows])
        assert np.array_equal(short_forms.match(words, rows), short_forms.match(words)[rows])
        checked += int(lexical.token_cover(q.tokens)[rows].any()) + int(lexical.kind_match(q)[0][rows].any())
    assert checked >= 3   # the rows hold matches, not only zeros


async def test_a_build_embeds_each_distinct_text_once(tmp_path, docs):
    """Variants sharing a name (or a whole view) are embedded once per build chunk; every product still gets
    its vectors."""
    embedder = HashEmbedder()
    variants = [replace(docs[0], product_id=f"V{i}", text=f"{docs[0].text} 颜色{i}") for i in range(3)]
    catalog = [*docs[:4], *variants]
    report = await build_index(tmp_path / "v.index", catalog, embedder, progress=False)
    assert report.embedded == len(catalog)
    # docs[0] and its three variants share the name and the name+usage view: 4 + 4 documents, 4 + 1 of each other
    assert len(embedder.embedded) == 2 * len(catalog) - 3 + len(catalog) - 3
    index = VectorIndex.load(tmp_path / "v.index", embedder.name)
    assert np.allclose(index.names[4], index.names[0]) and np.allclose(index.vectors[6, 1], index.vectors[0, 1])
    assert not np.allclose(index.vectors[6, 0], index.vectors[0, 0])


async def test_a_large_catalogs_lazy_tables_are_read_after_start_up_not_at_a_customers_query(tmp_path, docs,
                                                                                          monkeypatch):
    """Over an ANN generation the search reads the bridge's English words on a background thread as soon as it
    is built (half a minute at a million products), once: the first query that needs them finds them read."""
    from retrieval.bridge import ChineseBridge

    reads = []
    real = ChineseBridge._build
    monkeypatch.setattr(ChineseBridge, "_build", lambda self: (reads.append(self.size), real(self))[1])
    embedder = HashEmbedder()
    path = tmp_path / "shop.index"
    await build_index(path, docs, embedder, progress=False, ann_threshold=0)
    search = ProductSearch(docs, embedder, ann.Generation.open(path))
    assert search.warmed is not None
    await asyncio.wrap_future(search.warmed)
    assert reads == [len(docs)]
    await search.search("背囊", 3)   # a word the catalog never uses, read through the dictionary
    assert reads == [len(docs)]
    small = ProductSearch(docs, embedder, VectorIndex.load(path, embedder.name))   # a small catalog: when needed
    assert small.warmed is None and reads == [len(docs)]
    await small.search("背囊", 3)
    assert reads == [len(docs), len(docs)]


async def test_a_failed_background_reading_is_logged(tmp_path, docs, monkeypatch, caplog):
    from retrieval.bridge import ChineseBridge

    def broken(self):
        raise RuntimeError("a table that cannot be read")

    monkeypatch.setattr(ChineseBridge, "_build", broken)
    embedder = HashEmbedder()
    path = tmp_path / "shop.index"
    await build_index(path, docs, embedder, progress=False, ann_threshold=0)
    with caplog.at_level("ERROR", logger="retrieval.search"):
        search = ProductSearch(docs, embedder, ann.Generation.open(path))
        with pytest.raises(RuntimeError):
            await asyncio.wrap_future(search.warmed)
        for _ in range(100):   # the callback runs on the reading thread just after the future is done
            if caplog.records:
                break
            await asyncio.sleep(0.01)
    assert any("after start-up failed" in r.getMessage() and r.exc_info for r in caplog.records)


def test_a_large_catalogs_lexical_candidates_span_the_kinds_of_thing_touched():
    """Many variants of one thing tying on their lexical score do not take every candidate slot: at most
    `per_kind` of a kind while other kinds are among the best, then the rest by score; best first."""
    from retrieval.search import _spread_top

    scores = np.array([9, 9, 9, 9, 9, 9, 5, 4, 3, 8.5], dtype=np.float32)
    kinds = np.array([0, 0, 0, 0, 0, 0, 1, 1, 2, 0], dtype=np.int32)
    assert _spread_top(scores, kinds, 4, 2).tolist() == [0, 1, 6, 7]
    assert _spread_top(scores, kinds, 5, 2).tolist() == [0, 1, 6, 7, 8]
    # fewer kinds than slots: the best of the crowded kind fill the rest, all in score order
    assert _spread_top(scores, kinds, 7, 2).tolist() == [0, 1, 2, 3, 6, 7, 8]
    assert _spread_top(scores, kinds, 20, 2).tolist() == [0, 1, 2, 3, 4, 5, 9, 6, 7, 8]
    assert _spread_top(np.zeros(0, np.float32), np.zeros(0, np.int32), 4, 2).tolist() == []
