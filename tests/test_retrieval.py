"""Retrieval: documents, the persisted incremental index, embedders (local and a real HTTP double),
and the hybrid search with its confidence rule."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from openai import AsyncOpenAI

from agent.tools import WARNING, SearchProducts, ToolRunner, payload
from db.build import write_catalog
from db.records import demo_catalog
from guardrails.ledger import EvidenceLedger
from retrieval.documents import doc_from_product
from retrieval.embedders import EmbeddingError, OpenAIEmbedder, QueryVectorCache
from retrieval.index import IndexProblem, VectorIndex, build_index
from retrieval.search import ProductSearch
from tests.fakes.demo import DEMO_DAY
from tests.fakes.openai_server import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent


class CountingEmbedder:
    """A deterministic embedder that counts what it embeds; it can hold a call (`hold_after` calls in) until the
    build is interrupted, or fail on the texts of one product (`fail_on`, its name)."""

    name, dimensions = "test:counting", 8

    def __init__(self, hold_after: int | None = None, fail_on: str | None = None):
        self.embedded: list[str] = []
        self.hold_after, self.fail_on = hold_after, fail_on
        self.calls = 0
        self.holding = asyncio.Event()

    async def embed_passages(self, texts):
        self.calls += 1
        if self.hold_after is not None and self.calls > self.hold_after:
            self.holding.set()
            await asyncio.Event().wait()   # never answers: the build is interrupted while it waits
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            raise EmbeddingError("embeddings request failed: APITimeoutError")
        self.embedded += texts
        return np.array([[len(t), *([1.0] * 7)] for t in texts], dtype=np.float32)

    embed_queries = embed_passages


def test_documents_never_hold_price_or_stock(docs):
    football = next(d for d in docs if d.product_id == "001")
    assert "120" not in football.text and "50" not in football.text
    changed = doc_from_product({**demo_catalog(DEMO_DAY).products[0].__dict__, "price": "1", "stock_quantity": 0})
    assert changed.content_hash == football.content_hash


def test_base_name_drops_the_pack_note(docs):
    assert next(d for d in docs if d.product_id == "012").base_name == "乒乓球"


async def test_index_is_incremental_and_drops_removed(tmp_path, docs):
    path = tmp_path / "i.index"
    embedder = CountingEmbedder()
    first = await build_index(path, docs, embedder, progress=False, chunk=16)
    assert (first.embedded, first.kept, first.removed) == (len(docs), 0, 0)
    again = await build_index(path, docs, embedder, progress=False)
    assert (again.embedded, again.kept) == (0, len(docs))
    edited = [replace(docs[0], text=docs[0].text + "。新款"), *docs[1:-1]]
    third = await build_index(path, edited, embedder, progress=False)
    assert (third.embedded, third.kept, third.removed) == (1, len(docs) - 2, 2)
    index = VectorIndex.load(path, embedder.name)
    assert sorted(index.ids) == sorted(d.product_id for d in edited)


async def test_interrupted_build_resumes_without_losing_work(tmp_path, docs):
    path = tmp_path / "i.index"
    held = CountingEmbedder(hold_after=4)   # two calls a chunk: chunks after the second never answer
    build = asyncio.ensure_future(build_index(path, docs, held, progress=False, chunk=10))
    await held.holding.wait()
    build.cancel()   # Ctrl-C: asyncio.run cancels the running build
    with pytest.raises(asyncio.CancelledError):
        await build
    kept = VectorIndex.load(path, CountingEmbedder.name).ids
    assert kept == [d.product_id for d in docs[:len(kept)]] and len(kept) in (10, 20)   # whole chunks, in order
    resumed = CountingEmbedder()
    report = await build_index(path, docs, resumed, progress=False, chunk=10)
    assert (report.kept, report.embedded) == (len(kept), len(docs) - len(kept))
    assert len(resumed.embedded) == 3 * (len(docs) - len(kept))   # two views and the bare name per product


async def test_a_failed_chunk_keeps_the_chunks_embedded_beside_it(tmp_path, docs):
    """Chunks are embedded several at once: when one fails, those in flight finish and are kept with the ones
    before it, so the rerun embeds the failed chunk and the rest, nothing twice."""
    path = tmp_path / "i.index"
    with pytest.raises(EmbeddingError):
        await build_index(path, docs, CountingEmbedder(fail_on=docs[25].base_name), progress=False, chunk=10)
    kept = VectorIndex.load(path, CountingEmbedder.name).ids
    failed = {d.product_id for d in docs[20:30]}
    # the two chunks before the failed third, and the chunks sent beside it (whole ones, as many as were in flight)
    assert kept[:20] == [d.product_id for d in docs[:20]] and not failed & set(kept) and len(kept) > 20
    assert set(kept) <= {d.product_id for d in docs} and len(set(kept)) == len(kept)
    resumed = CountingEmbedder()
    report = await build_index(path, docs, resumed, progress=False, chunk=10)
    assert (report.kept, report.embedded) == (len(kept), len(docs) - len(kept))
    assert sorted(VectorIndex.load(path, CountingEmbedder.name).ids) == sorted(d.product_id for d in docs)


async def test_model_mismatch_and_corruption_name_the_fix(tmp_path, docs):
    path = tmp_path / "i.index"
    await build_index(path, docs[:3], CountingEmbedder(), progress=False)
    with pytest.raises(IndexProblem, match="built with test:counting .*build-index --rebuild"):
        VectorIndex.load(path, "local:other-model", 384)
    path.write_bytes(b"garbage")
    with pytest.raises(IndexProblem, match="unreadable.*build-index --rebuild"):
        VectorIndex.load(path, CountingEmbedder.name)
    report = await build_index(path, docs[:3], CountingEmbedder(), rebuild=True, progress=False)
    assert report.embedded == 3


async def test_remote_embedder_over_real_http():
    fake = await FakeOpenAI(dimensions=12).start()
    try:
        client = AsyncOpenAI(api_key="sk-test", base_url=fake.url, timeout=5, max_retries=1)
        embedder = OpenAIEmbedder(client, "text-embedding-v3", 12, batch_size=10)
        vectors = await embedder.embed_passages([f"商品{i}" for i in range(25)])
        assert vectors.shape == (25, 12)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert [len(body["input"]) for _, body, _ in fake.requests] == [10, 10, 5]
        assert fake.requests[0][1]["dimensions"] == 12
        fake.embedding_faults = ["short"]
        with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 inputs"):
            await embedder.embed_passages(["a", "b"])
        for fault in ("no_data", "ragged"):   # an answer read raw is still checked before it is used
            fake.embedding_faults = [fault]
            with pytest.raises(EmbeddingError, match="not an embeddings list|not one matrix"):
                await embedder.embed_passages(["a", "b"])
        fake.embedding_faults = ["500"]   # retried once by the client, then fine
        assert (await embedder.embed_queries(["跑步鞋"])).shape == (1, 12)
        fake.embedding_faults = ["500", "500"]
        with pytest.raises(EmbeddingError) as info:
            await embedder.embed_queries(["跑步鞋"])
        assert "sk-test" not in str(info.value)
        await client.close()
    finally:
        await fake.stop()


async def test_remote_embedder_builds_an_index_without_declared_dimensions(tmp_path, docs):
    fake = await FakeOpenAI(dimensions=12).start()
    try:
        client = AsyncOpenAI(api_key="sk-test", base_url=fake.url, timeout=5, max_retries=0)
        embedder = OpenAIEmbedder(client, "text-embedding-v3")
        report = await build_index(tmp_path / "r.index", docs[:7], embedder, progress=False, chunk=3)
        await client.close()
    finally:
        await fake.stop()
    index = VectorIndex.load(tmp_path / "r.index", "openai:text-embedding-v3", 12)
    assert report.embedded == 7 and index.vectors.shape == (7, 2, 12)


async def test_query_vectors_are_cached():
    embedder = CountingEmbedder()
    cache = QueryVectorCache(embedder, size=2)
    for q in ["a", "a", "b", "a", "c", "b"]:
        await cache.vector(q)
    assert embedder.embedded == ["a", "b", "c", "b"]


class SlowEmbedder(CountingEmbedder):
    """Counts its calls and answers only when released, failing the first call when told to."""

    def __init__(self, fail_first: bool = False):
        super().__init__()
        self.release, self.fail_first = asyncio.Event(), fail_first

    async def embed_queries(self, texts):
        self.calls += 1
        await self.release.wait()
        if self.fail_first and self.calls == 1:
            raise EmbeddingError("embeddings endpoint unreachable")
        self.embedded += texts
        return np.ones((len(texts), 8), dtype=np.float32)


async def test_a_question_asked_by_many_chats_at_once_is_embedded_once():
    embedder = SlowEmbedder()
    cache = QueryVectorCache(embedder)
    waiting = [asyncio.create_task(cache.vector("足球多少钱")) for _ in range(50)]
    await asyncio.sleep(0)
    waiting[0].cancel()   # one chat's turn gives up: the others still get the vector
    embedder.release.set()
    results = await asyncio.gather(*waiting[1:])
    assert embedder.calls == 1 and embedder.embedded == ["足球多少钱"]
    assert all(r is results[0] for r in results) and waiting[0].cancelled()
    await cache.vector("足球多少钱")
    assert embedder.calls == 1


async def test_a_failed_embedding_reaches_every_waiter_and_the_next_asker_tries_again():
    embedder = SlowEmbedder(fail_first=True)
    cache = QueryVectorCache(embedder)
    waiting = [asyncio.create_task(cache.vector("瑜伽垫")) for _ in range(5)]
    await asyncio.sleep(0)
    embedder.release.set()
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(r, EmbeddingError) for r in results) and embedder.calls == 1
    assert (await cache.vector("瑜伽垫")).shape == (8,) and embedder.calls == 2


@pytest.mark.parametrize(("query", "expected"), [
    ("我准备跑马拉松，需要透气并且能支撑足弓的装备", "004"),
    ("足球多少钱", "001"),
    ("籃球", "002"),
    ("兰球", "002"),
    ("nike足球", "001"),
    ("羽毛球拍买两支", "003"),
    ("跑不鞋", "004"),
])
async def test_search_finds_the_product(search, query, expected):
    candidates = await search.search(query, 3)
    assert candidates and candidates[0].product_id == expected


@pytest.mark.parametrize("query", ["无人机", "店里有无人机吗", "钓鱼竿", "高尔夫球杆", "跑步机", "拳击手套有吗"])
async def test_things_not_sold_return_no_candidates(search, query):
    assert await search.search(query, 5) == []


async def test_tool_result_is_marked_unverified_and_top_k_is_clamped(conn, search):
    runner = ToolRunner(conn, search, EvidenceLedger(), "u", prepare=False)
    result = payload(await runner.run("search_products", SearchProducts(query="跑步鞋", top_k=10)))
    assert result["is_verified_fact"] is False and result["warning"] == WARNING
    assert 1 <= len(result["candidates"]) <= 10
    assert all(c["is_verified_fact"] is False and set(c) == {"product_id", "product_name", "retrieval_score",
                                                            "is_verified_fact"} for c in result["candidates"])
    assert 1 <= len(await search.search("跑步鞋", top_k=50)) <= 10
    assert len(await search.search("运动", top_k=0)) == 1
    assert payload(await runner.run("search_products", SearchProducts(query="无人机")))["status"] == "no_match"


async def test_lexical_only_search_without_an_index(docs):
    lexical = ProductSearch(docs)
    assert not lexical.dense
    assert (await lexical.search("瑜伽垫"))[0].product_id == "005"
    assert await lexical.search("无人机") == []


@pytest.mark.slow   # a real bot.py process
def test_eval_command_prints_the_metrics_as_json(tmp_path):
    catalog = tmp_path / "c.json"
    catalog.write_text(json.dumps([{"product_id": "A", "product_name": "跑步鞋", "description": "透气 足弓支撑"},
                                   {"product_id": "B", "product_name": "篮球", "brand": "斯伯丁"},
                                   {"product_id": "C", "product_name": "瑜伽垫", "description": "防滑"}],
                                  ensure_ascii=False), encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in [
        {"query": "跑步鞋子", "relevant": ["A"], "kind": "synonym"},
        {"query": "斯伯丁", "relevant": ["B"], "kind": "brand"},
        {"query": "无人机", "relevant": [], "kind": "absent"}]), encoding="utf-8")
    result = subprocess.run([sys.executable, str(ROOT / "bot.py"), "eval-retrieval", "--catalog", str(catalog),
                             "--queries", str(queries), "--json"], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"overall", "by_kind", "empty"}
    assert set(report["overall"]) >= {"recall@1", "recall@3", "mrr@10"}
    assert set(report["by_kind"]) == {"synonym", "brand"}
    assert report["empty"] == {"count": 1, "returned_candidates": 0.0}
    assert report["overall"]["recall@1"] == 1.0


@pytest.mark.slow   # a real bot.py process
def test_eval_command_reports_bad_query_lines(tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "a", "relevant": ["1"]}\nnot json\n', encoding="utf-8")
    result = subprocess.run([sys.executable, str(ROOT / "bot.py"), "eval-retrieval", "--queries", str(queries)],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 1 and "q.jsonl line 2" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow   # a real bot.py process
def test_shipped_evaluation_set_meets_its_floor(docs):
    """A regression floor well under the measured figures (see bench/README.md)."""
    result = subprocess.run([sys.executable, str(ROOT / "bot.py"), "eval-retrieval", "--json"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    report = json.loads(result.stdout)
    assert report["overall"]["recall@3"] >= 0.9 and report["overall"]["recall@1"] >= 0.85
    assert report["empty"]["returned_candidates"] <= 0.2
    lines = (ROOT / "retrieval/evalsets/demo_queries.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 100


@pytest.mark.slow   # a real bot.py process
def test_build_index_command_is_incremental(tmp_path):
    db = tmp_path / "shop.db"
    write_catalog(db, demo_catalog(DEMO_DAY), source="demo")
    env = {"DATABASE_PATH": str(db), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    import os

    env = {**os.environ, **env}
    first = subprocess.run([sys.executable, str(ROOT / "bot.py"), "build-index", "--quiet"], capture_output=True,
                           text=True, timeout=300, cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert f"embedded {len(demo_catalog(DEMO_DAY).products)}, kept 0" in first.stdout
    second = subprocess.run([sys.executable, str(ROOT / "bot.py"), "build-index", "--quiet"], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path, env=env)
    assert "embedded 0, kept" in second.stdout
    assert (tmp_path / "shop.index").exists()
