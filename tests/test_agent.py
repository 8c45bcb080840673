"""The grounded turn through the real loop: the shop's scenarios with the offline model and an honest
scripted model, and misbehaving models that must never get a wrong fact to the customer."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from contextlib import asynccontextmanager

import aiohttp
import pytest
from openai import AsyncOpenAI

from agent.memory import ChatMemory, InProcessMemory, Turn
from agent.models import ModelError, ModelReply, ScriptedModel, call
from agent.openai_model import OpenAIChatModel
from agent.tools import CALLABLE_TOOLS, ToolError, parse_arguments, tool_schemas
from agent.turn import Agent
from guardrails.fallback import SAFE_FALLBACK
from tests.fakes.openai_server import FakeOpenAI, tool_call


async def converse(agent, questions, memory_store=None, user_id="console"):
    store = memory_store or InProcessMemory(warn=False)
    results = []
    for q in questions:
        result = await agent.answer(q, user_id=user_id, memory=await store.load("chat"))
        await store.append("chat", Turn(q, result.answer), result.focus_product_ids, result.quantity)
        results.append(result)
    return results


def amounts(text):
    return re.findall(r"\d+(?:\.\d+)?(?=元)", text)


# --- the shop's scenarios, offline model -----------------------------------------------------------

@pytest.mark.parametrize(("question", "must", "never"), [
    ("足球多少钱", ["120元"], []),
    ("羽毛球拍买两支", ["480元"], []),
    ("羽毛球拍一支多少钱", ["300元"], ["240"]),
    ("跑步鞋首次购买多少钱", ["400元"], []),
    ("足球售价999元吗", ["120元"], ["999"]),
    ("篮球买两个", ["200元"], []),
    ("乒乓球买三盒", ["105元", "另送1盒"], []),
])
async def test_price_scenarios_offline(agent, question, must, never):
    (result,) = await converse(agent, [question])
    assert result.status == "grounded" and not result.trace.degraded and not result.trace.fallback
    for text in must:
        assert text in result.answer
    for text in never:
        assert text not in result.answer
    assert result.trace.model_calls == 2   # search (with prepared evidence) → submit


async def test_follow_up_conversation_reaches_216(agent):
    first, promo, two = await converse(agent, ["足球多少钱", "有优惠吗", "那买两个呢"])
    assert "120元" in first.answer
    assert "9折" in promo.answer
    assert "216元" in two.answer and two.focus_product_ids == ["001"] and two.quantity == 2


async def test_a_new_product_starts_fresh(agent):
    _, other = await converse(agent, ["足球多少钱", "那羽毛球拍呢"])
    assert "羽毛球拍" in other.answer and "300元" in other.answer and other.focus_product_ids == ["003"]


async def test_price_change_request_is_refused_and_db_unchanged(agent, demo_db):
    before = hashlib.sha256(demo_db.read_bytes()).hexdigest()
    (result,) = await converse(agent, ["把足球价格改成1元"])
    assert "不能修改" in result.answer and "1元" not in result.answer
    assert hashlib.sha256(demo_db.read_bytes()).hexdigest() == before


async def test_things_not_sold_invent_nothing(agent):
    (result,) = await converse(agent, ["店里有无人机吗"])
    assert result.status == "insufficient_evidence"
    assert "没有" in result.answer and not amounts(result.answer) and not result.citations


async def test_need_described_without_a_name_finds_running_shoes(agent):
    (result,) = await converse(agent, ["我准备跑马拉松，需要透气并且能支撑足弓的装备"])
    assert result.answer.startswith("推荐您看看跑步鞋") and "product:004" in result.citations


async def test_policy_orders_and_greeting(agent):
    policy, orders, hello = await converse(agent, ["怎么退货", "我的订单到哪了", "你好"])
    assert "7天" in policy.answer and policy.citations == ["doc:returns#1"]
    assert "A1001" in orders.answer and "216元" in orders.answer
    assert "您好" in hello.answer and hello.trace.model_calls == 1


async def test_orders_are_only_the_asking_users(agent):
    (result,) = await converse(agent, ["我的订单A1003"], user_id="console")
    assert "A1003" not in result.answer and result.status == "insufficient_evidence"


async def test_insufficient_stock_gives_no_total(agent):
    (result,) = await converse(agent, ["跑步鞋买30双"])
    assert "库存20双" in result.answer and "不够" in result.answer and "15000" not in result.answer


@pytest.mark.parametrize("product_id", [f"{i:03d}" for i in range(1, 56)])
async def test_offline_answers_pass_the_validator_for_every_product(conn, search, product_id):
    agent = Agent(conn, search)
    memory = ChatMemory(focus_product_ids=[product_id])
    for question in ["多少钱", "有优惠吗", "那买两个呢", "那买三个呢", "首次购买呢"]:
        result = await agent.answer(question, user_id="u", memory=memory)
        assert result.status == "grounded", (product_id, question, result.answer)
        assert not result.trace.fallback and not result.trace.degraded


# --- an honest scripted model -----------------------------------------------------------------------

def honest_answer(messages):
    """Write the answer from the last tool result, as a careful model would."""
    result = json.loads(messages[-1]["content"])
    calc = result["prepared_evidence"]["calculation"]
    product = result["prepared_evidence"]["product_details"]["products"][0]
    answer = f"{product['product_name']}买{calc['quantity']}{calc['unit']}实付{calc['final_total']}元。"
    return ModelReply(None, [call("submit_answer", json.dumps(
        {"answer": answer, "citation_ids": [product["evidence_id"], calc["evidence_id"]],
         "status": "grounded"}, ensure_ascii=False))])


def honest(query):
    return ScriptedModel([ModelReply(None, [call("search_products", json.dumps({"query": query}))]), honest_answer])


@pytest.mark.parametrize(("question", "expected"), [("足球多少钱", "108.00元"), ("羽毛球拍买两支", "480.00元"),
                                                    ("跑步鞋首次购买", "400.00元")])
async def test_honest_scripted_model_needs_two_calls(conn, search, question, expected):
    model = honest(question)
    result = await Agent(conn, search, model).answer(question, user_id="u")
    assert expected in result.answer and result.trace.model_calls == 2 and not result.trace.degraded
    assert model.calls[0][1] == "required" and model.calls[1][1] == "auto"


# --- misbehaving models ------------------------------------------------------------------------------

def submit(answer, cites=(), status="grounded"):
    return ModelReply(None, [call("submit_answer", json.dumps(
        {"answer": answer, "citation_ids": list(cites), "status": status}, ensure_ascii=False))])


SEARCH = ModelReply(None, [call("search_products", '{"query": "足球"}')])


async def test_invented_prices_never_reach_the_customer(conn, search):
    model = ScriptedModel([SEARCH, submit("足球只要99元！", ["product:001"]), submit("足球九十九块", ["product:001"]),
                           submit("足球 ¥99", ["product:001"])])
    result = await Agent(conn, search, model).answer("足球多少钱", user_id="u")
    assert "99" not in result.answer and "120元" in result.answer
    assert result.trace.degraded and [v.ok for v in result.trace.verdicts][:3] == [False, False, False]
    assert "UNVERIFIED_AMOUNT" in result.trace.verdicts[0].codes


async def test_rejection_reason_goes_back_to_the_model(conn, search):
    model = ScriptedModel([SEARCH, submit("足球售价120元"), submit("足球售价120元", ["product:001"])])
    result = await Agent(conn, search, model).answer("足球多少钱", user_id="u")
    assert result.answer == "足球售价120元" and result.trace.model_calls == 3
    rejection = json.loads(model.calls[2][0][-1]["content"])
    assert rejection["accepted"] is False and "NO_CITATION" in rejection["reasons"]


async def test_model_that_ignores_tools_is_never_shown(conn, search):
    model = ScriptedModel([ModelReply("足球特价50元，快来买！")] * 4)
    result = await Agent(conn, search, model).answer("足球多少钱", user_id="u")
    assert "50元" not in result.answer and "120元" in result.answer and result.trace.degraded


async def test_malformed_and_unknown_tool_calls_run_nothing(conn, search):
    model = ScriptedModel([
        ModelReply(None, [call("search_products", '{"query": "足球"')]),
        ModelReply(None, [call("get_product_details", '{"product_ids": "001", "extra": 1}')]),
        ModelReply(None, [call("set_price", '{"product_id": "001", "price": 1}')]),
        ModelReply(None, [call("calculate_final_price", '{"product_id": "001", "quantity": 0}')]),
        SEARCH, lambda m: submit("足球售价120元", ["product:001"])])
    result = await Agent(conn, search, model, max_model_calls=8).answer("足球多少钱", user_id="u")
    errors = [json.loads(model.calls[i][0][-1]["content"])["error"] for i in (1, 2, 3, 4)]
    assert errors == ["MALFORMED_JSON", "INVALID_ARGUMENTS", "UNKNOWN_TOOL", "INVALID_ARGUMENTS"]
    assert result.answer == "足球售价120元"


async def test_invented_product_id_is_not_found_and_blocked(conn, search):
    model = ScriptedModel([ModelReply(None, [call("get_product_details", '{"product_ids": ["999"]}')]),
                           submit("商品ID：999 无人机售价10元", ["product:999"]),
                           submit("商品ID：999 无人机售价10元", ["product:999"]),
                           submit("商品ID：999 无人机售价10元", ["product:999"])])
    result = await Agent(conn, search, model).answer("无人机多少钱", user_id="u")
    assert "999" not in result.answer and "10元" not in result.answer
    assert set(result.trace.verdicts[0].codes) >= {"UNKNOWN_CITATION", "UNVERIFIED_PRODUCT_ID"}


async def test_a_model_that_loops_is_stopped(conn, search):
    model = ScriptedModel([SEARCH] * 20)
    result = await Agent(conn, search, model, max_model_calls=4).answer("足球多少钱", user_id="u")
    assert result.trace.degraded and "4 model calls" in result.trace.degraded_reason
    assert "120元" in result.answer


async def test_model_errors_degrade_to_offline(conn, search):
    model = ScriptedModel([ModelError("the chat model answered HTTP 500")])
    result = await Agent(conn, search, model).answer("羽毛球拍买两支", user_id="u")
    assert "480元" in result.answer and result.trace.degraded_reason == "the chat model answered HTTP 500"


async def test_blocked_drafts_never_enter_memory(conn, search):
    store = InProcessMemory(warn=False)
    model = ScriptedModel([SEARCH, submit("足球只要99元", ["product:001"]), submit("足球只要99元", ["product:001"]),
                           submit("足球只要99元", ["product:001"])])
    await converse(Agent(conn, search, model), ["足球多少钱"], store)
    memory = await store.load("chat")
    assert "99" not in memory.turns[0].assistant


async def test_when_nothing_is_releasable_the_customer_gets_the_fallback(conn, search, monkeypatch):
    agent = Agent(conn, search, ScriptedModel([ModelError("down")]))

    async def broken(*args, **kwargs):
        raise ModelError("offline broke too")

    monkeypatch.setattr(agent.offline, "complete", broken)
    result = await agent.answer("足球多少钱", user_id="u")
    assert result.answer == SAFE_FALLBACK and result.status == "fallback" and result.trace.fallback


# --- tool schemas -------------------------------------------------------------------------------------

def test_tool_schemas_are_strict():
    schemas = {s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas(CALLABLE_TOOLS)}
    assert set(schemas) == {"search_products", "get_product_details", "get_promotions", "calculate_final_price",
                            "search_knowledge", "list_my_orders", "list_categories", "submit_answer",
                            "calculate_units_to_receive", "calculate_threshold_gap", "compare_amounts"}
    for name in ("calculate_units_to_receive", "calculate_threshold_gap", "compare_amounts"):
        assert not any("price" in field for field in schemas[name]["properties"]), name
    for params in schemas.values():
        assert params["additionalProperties"] is False
    assert "price" not in schemas["calculate_final_price"]["properties"]
    assert schemas["search_products"]["properties"]["top_k"]["maximum"] == 10
    assert schemas["get_product_details"]["properties"]["product_ids"]["maxItems"] == 10
    with pytest.raises(ToolError, match="price"):
        parse_arguments("calculate_final_price", '{"product_id": "001", "quantity": 1, "price": 1}')


# --- the real OpenAI client against the scripted HTTP server ------------------------------------------

async def test_openai_model_end_to_end(conn, search):
    fake = await FakeOpenAI().start()

    def script(body):
        tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
        if not tool_messages:
            return {"tool_calls": [tool_call("search_products", {"query": "羽毛球拍"})]}
        calc = json.loads(tool_messages[-1]["content"])["prepared_evidence"]["calculation"]
        return {"tool_calls": [tool_call("submit_answer", {
            "answer": f"羽毛球拍买两支实付{calc['final_total']}元。", "citation_ids": [calc["evidence_id"]],
            "status": "grounded"}, "call_2")]}

    fake.chat_function = script
    model = OpenAIChatModel(AsyncOpenAI(api_key="sk-secret", base_url=fake.url, timeout=5, max_retries=0), "qwen-plus")
    try:
        result = await Agent(conn, search, model).answer("羽毛球拍买两支", user_id="u")
    finally:
        await model.close()
        await fake.stop()
    assert result.answer == "羽毛球拍买两支实付480.00元。" and result.trace.model_calls == 2
    first = fake.requests[0][1]
    assert first["tool_choice"] == "required" and first["parallel_tool_calls"] is False
    assert first["model"] == "qwen-plus" and all(t["function"]["parameters"]["additionalProperties"] is False
                                                 for t in first["tools"])
    assert fake.requests[1][1]["tool_choice"] == "auto"
    assert "sk-secret" not in json.dumps(result.trace.as_dict())


# An honest remote model's two replies to 足球多少钱: search, then a grounded answer.
HONEST_FOOTBALL = [
    {"tool_calls": [tool_call("search_products", {"query": "足球"})]},
    {"tool_calls": [tool_call("submit_answer", {"answer": "足球售价120元。", "citation_ids": ["product:001"],
                                                "status": "grounded"})]},
]


@asynccontextmanager
async def remote(replies=(), stall_seconds=30.0, **client):
    """A FakeOpenAI server and the real OpenAIChatModel talking to it."""
    fake = await FakeOpenAI(chat_replies=list(replies), stall_seconds=stall_seconds).start()
    model = OpenAIChatModel(AsyncOpenAI(api_key="sk-secret", base_url=fake.url, **client), "m")
    try:
        yield fake, model
    finally:
        await model.close()
        await fake.stop()


async def test_openai_http_500_is_retried_then_degrades(conn, search):
    async with remote([500, 500, 500], timeout=5, max_retries=2) as (fake, model):
        result = await Agent(conn, search, model).answer("足球多少钱", user_id="u")
    assert len(fake.requests) == 3 and result.trace.degraded
    assert "HTTP 500" in result.trace.degraded_reason and "120元" in result.answer


async def test_openai_429_then_success(conn, search):
    async with remote([429, *HONEST_FOOTBALL], timeout=5, max_retries=2) as (_, model):
        result = await Agent(conn, search, model).answer("足球多少钱", user_id="u")
    assert result.answer == "足球售价120元。" and result.trace.retries == 1 and not result.trace.degraded


async def test_openai_stall_past_the_timeout_degrades(conn, search):
    async with remote(["stall"], stall_seconds=5, timeout=0.3, max_retries=0) as (_, model):
        result = await Agent(conn, search, model).answer("足球多少钱", user_id="u")
    assert result.trace.degraded and "timed out" in result.trace.degraded_reason and "120元" in result.answer


async def test_turn_budget_bounds_a_slow_model(conn, search):
    async with remote(["stall"], stall_seconds=5, timeout=30, max_retries=0) as (_, model):
        result = await Agent(conn, search, model, turn_budget_seconds=0.5).answer("足球多少钱", user_id="u")
    assert result.trace.degraded_reason == "turn budget spent" and "120元" in result.answer


async def test_a_stalled_fake_request_is_answered_when_the_fake_stops():
    """The fake's stop() ends a request stalled on purpose (its shutdown would otherwise wait the stall out:
    with the hour asked here, the bounded waits below fail)."""
    fake = await FakeOpenAI(chat_replies=["stall"], stall_seconds=3600).start()
    async with aiohttp.ClientSession() as http:
        request = asyncio.ensure_future(http.post(f"{fake.url}/chat/completions", json={"messages": []}))
        await fake.wait_requests("chat")
        await asyncio.wait_for(fake.stop(), 30)
        response = await asyncio.wait_for(request, 30)
        body = await response.json()
    assert body["choices"][0]["message"]["content"] == "too late"


async def test_endpoint_without_tool_choice_required_falls_back_to_auto(conn, search):
    async with remote([400, *HONEST_FOOTBALL], timeout=5, max_retries=0) as (fake, model):
        result = await Agent(conn, search, model).answer("足球多少钱", user_id="u")
    assert result.answer == "足球售价120元。" and not result.trace.degraded
    assert [body["tool_choice"] for _, body, _ in fake.requests] == ["required", "auto", "auto"]


async def test_the_first_turns_arriving_together_build_the_policy_search_once(conn, search, monkeypatch):
    """Thirty turns at start-up used to build the policy search thirty times (each embedding every chunk)."""
    import asyncio

    import agent.turn as turn_module
    from agent.turn import Agent

    builds = []
    real = turn_module.load_passages

    async def counting(*args):
        builds.append(1)
        return await real(*args)

    monkeypatch.setattr(turn_module, "load_passages", counting)
    agent = Agent(conn, search)
    found = await asyncio.gather(*(agent.passages() for _ in range(30)))
    assert len(builds) == 1 and all(p is found[0] for p in found)
