"""Customer turns in a second process (handlers/turn_process.py): the child answers as the parent's own agent
does — the same answers, focus, quantities and audit signs over a conversation with follow-ups — and when
the child dies its turns are answered by the parent until it has been started again."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
import pytest_asyncio

from agent.memory import ChatMemory, Turn
from agent.settings import Settings
from agent.startup import open_agent
from handlers import turn_process
from handlers.delivery.metrics import TURN_PLACES
from tests.fakes.demo import DEMO_DAY

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]   # one child process for the module
# (TURN_PROCESS=auto|on|off: tests/test_settings.py)
CONVERSATION = ["足球多少钱", "有优惠吗", "那买两个呢", "羽毛球拍和网球拍哪个便宜", "第二个有货吗", "宇航服多少钱",
                "我上个月买了多少钱的东西", "怎么退货"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def started(demo_db):
    settings = Settings(database_path=demo_db, kefu_today=DEMO_DAY, _env_file=None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(turn_process, "RESTART_PAUSES", (0.05,))
        async with open_agent(settings) as agent, turn_process.turn_process(settings, agent) as child:
            yield agent, child


@pytest_asyncio.fixture(loop_scope="module")
async def agent_and_child(started):
    """The module's agent and child, the child ready (started again after a test killed it), calls counted anew."""
    agent, child = started
    await asyncio.wait_for(child.ready.wait(), 120)
    child.calls.update(child=0, local=0)
    return agent, child


def remembered(memory: ChatMemory, text: str, result) -> ChatMemory:
    return ChatMemory([*memory.turns, Turn(text, result.answer)], list(result.focus_product_ids), result.quantity)


async def test_the_child_answers_a_conversation_as_the_agent_does(agent_and_child):
    agent, child = agent_and_child
    here, there, said = ChatMemory(), ChatMemory(), []
    for text in CONVERSATION:
        mine = await agent.answer(text, user_id="u1", memory=here)
        theirs = await child.answer(text, user_id="u1", memory=there)
        assert (theirs.answer, theirs.status, theirs.citations, theirs.focus_product_ids, theirs.quantity) == \
            (mine.answer, mine.status, mine.citations, mine.focus_product_ids, mine.quantity), text
        assert theirs.trace.evidence_figures == mine.trace.evidence_figures
        earlier = [t.user for t in here.turns]
        assert await child.signs(text, theirs, earlier) == await agent.signs(text, mine, earlier)
        here, there = remembered(here, text, mine), remembered(there, text, theirs)
        said.append(theirs.answer)
    assert child.calls == {"child": len(CONVERSATION), "local": 0}
    assert "120元" in said[0] and "216元" in said[2]   # the memory went to the child with the message


async def test_a_dead_child_is_answered_for_here_then_started_again(agent_and_child):
    agent, child = agent_and_child
    process = child._process
    first = process.pid
    os.kill(first, signal.SIGKILL)
    await process.wait()
    here = TURN_PLACES.labels("here")._value.get()
    result = await child.answer("足球多少钱", user_id="u2")
    assert "120元" in result.answer and child.calls["local"] == 1
    assert TURN_PLACES.labels("here")._value.get() == here + 1   # what /metrics shows an operator
    await asyncio.wait_for(child.ready.wait(), 120)   # started again
    assert child._process.pid != first
    assert "120元" in (await child.answer("足球多少钱", user_id="u2")).answer and child.calls["child"] == 1


async def test_a_call_in_flight_when_the_child_dies_is_answered_here(agent_and_child):
    agent, child = agent_and_child
    calls = [asyncio.create_task(child.answer(text, user_id="u3")) for text in CONVERSATION]
    await asyncio.sleep(0)   # the calls are written to the child
    os.kill(child._process.pid, signal.SIGKILL)
    results = await asyncio.gather(*calls)
    assert "120元" in results[0].answer
    assert [r.answer for r in results] == [(await agent.answer(t, user_id="u3")).answer for t in CONVERSATION]
    assert child.calls["child"] + child.calls["local"] == len(CONVERSATION)


async def test_a_stuck_child_is_answered_for_here_then_replaced(agent_and_child, monkeypatch):
    """A child that stops answering (SIGSTOP) costs one wait of the turn budget, not one per turn: it is killed,
    its turn answered here, and a new child started."""
    agent, child = agent_and_child
    monkeypatch.setattr(turn_process, "CALL_MARGIN_SECONDS", 0.5 - child.settings.turn_budget_seconds)
    process = child._process
    os.kill(process.pid, signal.SIGSTOP)
    assert "120元" in (await child.answer("足球多少钱", user_id="u4")).answer and child.calls["local"] == 1
    await asyncio.wait_for(process.wait(), 30)   # killed (a stopped process does not end by itself)
    await asyncio.wait_for(child.ready.wait(), 120)
    assert child._process.pid != process.pid
