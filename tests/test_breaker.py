"""The circuit breaker in front of the remote model and the remote embeddings: the breaker alone with a
fake clock, then a hung endpoint (a socket that accepts and never answers) and a refused one through the
real openai client and the real turn: once the circuit opens no request reaches the endpoint, the turn is
degraded with the reason "circuit open", and the probe after the cooling period closes it again."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from openai import AsyncOpenAI
from prometheus_client import REGISTRY, generate_latest

import handlers.delivery.metrics  # noqa: F401  (registers the circuits' collector)
from agent.breaker import Breaker, State, circuits
from agent.openai_model import OpenAIChatModel
from agent.turn import Agent
from retrieval.embedders import EmbeddingError, OpenAIEmbedder
from retrieval.index import VectorIndex, build_index
from retrieval.search import ProductSearch
from retrieval.service import load_passages
from tests.fakes.openai_server import FakeOpenAI, HungEndpoint, refused_url, tool_call


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Unreachable(Exception):
    pass


# --- the breaker alone -------------------------------------------------------------------------------

def test_consecutive_failures_open_the_circuit_and_calls_are_skipped():
    clock = Clock()
    breaker = Breaker("unit-a", failures=3, cooldown_seconds=60, clock=clock)
    for _ in range(2):
        assert breaker.allow()
        breaker.unreachable()
    assert breaker.state is State.CLOSED
    assert breaker.allow()
    breaker.unreachable()
    assert breaker.state is State.OPEN and breaker.opened_total == 1
    clock.now += 59
    assert not breaker.allow() and not breaker.allow()
    assert breaker.skipped_total == 2
    assert breaker.why_skipped().startswith("circuit open: the unit-a endpoint did not answer 3 calls in a row")
    assert "1 s more" in breaker.why_skipped()


def test_an_answer_resets_the_count():
    breaker = Breaker("unit-b", failures=3, clock=Clock())
    for outcome in ["fail", "fail", "ok", "fail", "fail", "ok", "fail", "fail"]:
        assert breaker.allow()
        breaker.unreachable() if outcome == "fail" else breaker.reached()
    assert breaker.state is State.CLOSED and breaker.opened_total == 0


def test_after_the_cooldown_one_probe_goes_and_its_answer_closes_the_circuit():
    clock = Clock()
    breaker = Breaker("unit-c", failures=1, cooldown_seconds=30, clock=clock)
    breaker.unreachable()
    clock.now += 30
    assert breaker.allow() and breaker.probing     # the probe
    assert not breaker.allow()                     # the others wait for its outcome
    assert "being probed" in breaker.why_skipped()
    breaker.reached()
    assert breaker.state is State.CLOSED and breaker.allow() and not breaker.probing


def test_a_failed_probe_opens_the_circuit_for_another_cooling_period():
    clock = Clock()
    breaker = Breaker("unit-d", failures=2, cooldown_seconds=30, clock=clock)
    breaker.unreachable()
    breaker.unreachable()
    clock.now += 31
    assert breaker.allow() and breaker.probing
    breaker.unreachable()
    assert breaker.state is State.OPEN and breaker.opened_total == 2
    clock.now += 29
    assert not breaker.allow()
    clock.now += 1
    assert breaker.allow() and breaker.probing


async def test_watch_counts_the_unreachable_kinds_and_a_cancelled_call():
    breaker = Breaker("unit-e", failures=3, clock=Clock())
    with pytest.raises(Unreachable), breaker.watch((Unreachable, asyncio.CancelledError)):
        raise Unreachable
    with pytest.raises(ValueError), breaker.watch((Unreachable,)):   # the endpoint answered, wrongly
        raise ValueError
    assert breaker.consecutive == 0

    async def waits_forever():
        with breaker.watch((Unreachable, asyncio.CancelledError)):
            await asyncio.sleep(3600)

    for _ in range(3):   # a caller's deadline running out while the call still waits
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.01):
                await waits_forever()
    assert breaker.state is State.OPEN


def test_circuits_sum_up_each_endpoint_and_metrics_show_them():
    clock = Clock()
    first, second = Breaker("unit-f", failures=1, clock=clock), Breaker("unit-f", failures=1, clock=clock)
    first.unreachable()
    assert not first.allow()
    (circuit,) = [c for c in circuits() if c.endpoint == "unit-f"]
    assert (circuit.state, circuit.opened_total, circuit.skipped_total) == (State.OPEN, 1, 1)
    text = generate_latest(REGISTRY).decode()
    assert 'kefu_circuit_state{endpoint="unit-f"} 2.0' in text
    assert 'kefu_circuit_opened_total{endpoint="unit-f"} 1.0' in text
    assert 'kefu_circuit_skipped_calls_total{endpoint="unit-f"} 1.0' in text
    second.reached()
    del first   # a breaker that is gone is not reported
    (circuit,) = [c for c in circuits() if c.endpoint == "unit-f"]
    assert circuit.state is State.CLOSED


def test_a_breaker_needs_sane_settings():
    with pytest.raises(ValueError):
        Breaker("x", failures=0)
    with pytest.raises(ValueError):
        Breaker("x", cooldown_seconds=0)


# --- the real client, the real turn ------------------------------------------------------------------

HONEST_FOOTBALL = [
    {"tool_calls": [tool_call("search_products", {"query": "足球"})]},
    {"tool_calls": [tool_call("submit_answer", {"answer": "足球售价120元。", "citation_ids": ["product:001"],
                                                "status": "grounded"})]},
]


def chat_model(url: str, breaker: Breaker, timeout: float = 0.3, max_retries: int = 0) -> OpenAIChatModel:
    client = AsyncOpenAI(api_key="sk-secret", base_url=url, max_retries=max_retries,
                         timeout=openai.Timeout(timeout, connect=timeout))
    return OpenAIChatModel(client, "m", breaker=breaker)


async def test_a_hung_model_endpoint_opens_the_circuit_and_the_probe_closes_it(conn, search):
    clock = Clock()
    breaker = Breaker("chat-hung", failures=2, cooldown_seconds=60, clock=clock)
    hung = await HungEndpoint().start()
    model = chat_model(hung.url, breaker)
    agent = Agent(conn, search, model)
    fake = None
    try:
        for turn in (1, 2):
            result = await agent.answer("足球多少钱", user_id="u")
            assert result.trace.degraded and "timed out" in result.trace.degraded_reason
            assert hung.connections == turn and "120元" in result.answer
        assert breaker.state is State.OPEN
        assert 'kefu_circuit_state{endpoint="chat-hung"} 2.0' in generate_latest(REGISTRY).decode()

        for _ in range(3):   # open: the offline model answers, nothing reaches the endpoint
            result = await agent.answer("足球多少钱", user_id="u")
            assert result.trace.degraded and result.trace.degraded_reason.startswith("circuit open")
            assert "120元" in result.answer and result.trace.model_calls > 0
        report = await agent.analyst.ask("上个月销售额是多少")   # /ask shares the model, and its circuit
        assert report.trace.degraded and report.trace.degraded_reason.startswith("circuit open")
        assert hung.connections == 2 and breaker.skipped_total == 4

        await hung.stop()   # the endpoint answers again, at the same address
        fake = await FakeOpenAI(chat_replies=list(HONEST_FOOTBALL), port=hung.port).start()
        clock.now += 30
        result = await agent.answer("足球多少钱", user_id="u")
        assert result.trace.degraded_reason.startswith("circuit open") and not fake.requests   # still cooling
        clock.now += 30
        result = await agent.answer("足球多少钱", user_id="u")   # the probe
        assert result.answer == "足球售价120元。" and not result.trace.degraded
        assert breaker.state is State.CLOSED and len(fake.requests) == 2
        assert 'kefu_circuit_state{endpoint="chat-hung"} 0.0' in generate_latest(REGISTRY).decode()
        assert "sk-secret" not in json.dumps(result.trace.as_dict())
    finally:
        await model.close()
        await hung.stop()
        if fake is not None:
            await fake.stop()


async def test_the_turn_budget_running_out_on_a_hung_endpoint_counts_as_a_failure(conn, search):
    """A read timeout longer than the turn's budget (the defaults: 20 s × 3 attempts against 40 s): the
    turn gives up on the call, and that is what the breaker counts."""
    clock = Clock()
    breaker = Breaker("chat-budget", failures=2, cooldown_seconds=60, clock=clock)
    hung = await HungEndpoint().start()
    model = chat_model(hung.url, breaker, timeout=30, max_retries=2)
    agent = Agent(conn, search, model, turn_budget_seconds=0.3)
    try:
        reasons = [(await agent.answer("足球多少钱", user_id="u")).trace.degraded_reason for _ in range(3)]
    finally:
        await model.close()
        await hung.stop()
    assert reasons[:2] == ["turn budget spent"] * 2 and reasons[2].startswith("circuit open")
    assert hung.connections == 2


async def test_a_failed_probe_opens_the_circuit_again(conn, search):
    clock = Clock()
    breaker = Breaker("chat-probe", failures=1, cooldown_seconds=60, clock=clock)
    hung = await HungEndpoint().start()
    model = chat_model(hung.url, breaker, max_retries=2)
    agent = Agent(conn, search, model)
    try:
        await agent.answer("足球多少钱", user_id="u")   # three attempts (two retries): one failed call
        assert breaker.state is State.OPEN and hung.connections == 3
        clock.now += 60
        result = await agent.answer("足球多少钱", user_id="u")   # the probe: one attempt, no retries
        assert "timed out" in result.trace.degraded_reason and hung.connections == 4
        assert breaker.state is State.OPEN and breaker.opened_total == 2
        result = await agent.answer("足球多少钱", user_id="u")
        assert result.trace.degraded_reason.startswith("circuit open") and hung.connections == 4
    finally:
        await model.close()
        await hung.stop()


async def test_refused_connections_open_the_circuit(conn, search):
    breaker = Breaker("chat-refused", failures=2, cooldown_seconds=60, clock=Clock())
    model = chat_model(refused_url(), breaker)
    agent = Agent(conn, search, model)
    try:
        reasons = [(await agent.answer("足球多少钱", user_id="u")).trace.degraded_reason for _ in range(3)]
    finally:
        await model.close()
    assert reasons[:2] == ["the chat model failed: APIConnectionError"] * 2
    assert reasons[2].startswith("circuit open") and breaker.skipped_total == 1


async def test_an_http_error_is_an_answer_not_a_failure(conn, search):
    breaker = Breaker("chat-500", failures=1, clock=Clock())
    fake = await FakeOpenAI(chat_replies=[500, 500]).start()
    model = chat_model(fake.url, breaker, timeout=5)
    agent = Agent(conn, search, model)
    try:
        for _ in range(2):
            result = await agent.answer("足球多少钱", user_id="u")
            assert "HTTP 500" in result.trace.degraded_reason
    finally:
        await model.close()
        await fake.stop()
    assert breaker.state is State.CLOSED and len(fake.requests) == 2


# --- remote embeddings -------------------------------------------------------------------------------

async def test_a_hung_embeddings_endpoint_leaves_search_lexical_and_says_so(conn, docs, tmp_path):
    """The index is built while the endpoint answers; then it hangs: each query is ranked by words alone
    (the search tool's status says why), and once the circuit opens nothing more reaches it."""
    fake = await FakeOpenAI(dimensions=12).start()
    builder = AsyncOpenAI(api_key="sk-test", base_url=fake.url, timeout=5, max_retries=0)
    try:
        await build_index(tmp_path / "r.index", docs, OpenAIEmbedder(builder, "emb", 12), progress=False)
    finally:
        await builder.close()
        await fake.stop()
    index = VectorIndex.load(tmp_path / "r.index", "openai:emb", 12)

    clock = Clock()
    breaker = Breaker("embeddings-hung", failures=2, cooldown_seconds=60, clock=clock)
    hung = await HungEndpoint().start()
    client = AsyncOpenAI(api_key="sk-test", base_url=hung.url, max_retries=0, timeout=openai.Timeout(0.3))
    embedder = OpenAIEmbedder(client, "emb", 12, circuit=breaker)
    search = ProductSearch(docs, embedder, index)
    agent = Agent(conn, search, passages=await load_passages(conn, None))
    try:
        first = await search.find("足球")
        assert [c.product_id for c in first.candidates][:1] == ["001"]
        assert first.lexical_only == "embeddings request failed: APITimeoutError"
        result = await agent.answer("我准备跑马拉松，需要透气并且能支撑足弓的装备", user_id="u")   # 2nd failure: open
        (searched,) = [t for t in result.trace.tool_calls if t.name == "search_products"]
        assert searched.status.endswith("(lexical only: embeddings request failed: APITimeoutError)")
        assert breaker.state is State.OPEN and hung.connections == 2 and "跑步鞋" in result.answer
        result = await agent.answer("推荐一款适合初学者的球拍", user_id="u")
        (searched,) = [t for t in result.trace.tool_calls if t.name == "search_products"]
        assert searched.status.startswith("candidates (lexical only: circuit open: the embeddings-hung endpoint")
        assert "拍" in result.answer and hung.connections == 2
        with pytest.raises(EmbeddingError, match="^circuit open"):   # the evaluation's search is strict
            await search.search("跑步鞋")
        assert await search.closeness("给孩子的足球", ["001"]) == {}
    finally:
        await client.close()
        await hung.stop()


async def test_policy_search_falls_back_to_words_when_the_embedder_fails():
    import numpy as np

    from retrieval.passages import Passage, PassageSearch

    class SkippedEmbedder:
        name, dimensions = "test:skipped", 4

        async def embed_queries(self, texts):
            raise EmbeddingError("circuit open: the embeddings endpoint did not answer 3 calls in a row")

    passages = [Passage("returns#1", "退货", "七天无理由退货，商品完好即可。"), Passage("shipping#1", "发货", "下单后48小时内发货。")]
    search = PassageSearch(passages, SkippedEmbedder(), np.eye(2, 4, dtype=np.float32))
    assert [pid for pid, _ in await search.search("怎么退货")] == ["returns#1"]
