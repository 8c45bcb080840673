"""The one model⇄tool loop (agent/loop.py) shared by the customer turn and the operators' /ask: typed
results shown as JSON, one retry budget, the release check passed in."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from agent.loop import GiveUp, ToolLoop, Toolset
from agent.models import ModelReply, ScriptedModel, call
from agent.tools import SubmitAnswer
from agent.trace import TurnTrace
from guardrails.ledger import EvidenceLedger
from guardrails.validator import Problem, Verdict


class Echo(BaseModel):
    word: str


@dataclass(frozen=True)
class Echoed:
    word: str
    status: str = "echoed"


TOOLS: dict[str, type[BaseModel]] = {"echo": Echo, "submit_answer": SubmitAnswer}


async def run_echo(name: str, args: BaseModel) -> Echoed:
    assert isinstance(args, Echo)
    return Echoed(args.word)


def submit(answer: str) -> ModelReply:
    return ModelReply(tool_calls=[call("submit_answer", json.dumps(
        {"answer": answer, "citation_ids": [], "status": "grounded"}), "s")])


def only(word: str):
    """A check that releases an answer holding `word` and sends anything else back with a reason."""
    def check(args: SubmitAnswer) -> Verdict:
        return Verdict(() if word in args.answer else (Problem("WRONG_WORD", f"say {word}"),))
    return check


async def test_a_typed_result_is_shown_as_json_and_an_accepted_submission_is_released():
    model = ScriptedModel([ModelReply(tool_calls=[call("echo", '{"word": "足球"}')]), submit("足球")])
    trace = TurnTrace(model="scripted")
    released = await ToolLoop().run(model, [], Toolset(TOOLS, run_echo), only("足球"), EvidenceLedger(), trace)
    assert released.answer == "足球" and released.status == "grounded"
    tool_message = model.calls[1][0][-1]
    assert tool_message["role"] == "tool" and json.loads(tool_message["content"]) == {"word": "足球", "status": "echoed"}
    assert [t.name for t in trace.tool_calls] == ["echo"] and trace.verdicts[-1].ok


async def test_a_rejection_sends_the_reasons_back_and_the_budget_is_shared():
    model = ScriptedModel([submit("篮球"), submit("排球"), submit("网球")])
    with pytest.raises(GiveUp, match="rejected 3 times"):
        await ToolLoop(max_rejections=2).run(model, [], Toolset(TOOLS, run_echo), only("足球"), EvidenceLedger(),
                                             TurnTrace(model="scripted"))
    feedback = json.loads(model.calls[1][0][-1]["content"])
    assert feedback["accepted"] is False and feedback["reasons"] == ["WRONG_WORD"]


async def test_plain_text_gets_the_toolsets_reminder_and_bad_arguments_an_error_result():
    model = ScriptedModel([ModelReply(content="足球120元"), ModelReply(tool_calls=[call("echo", "{not json")]),
                           submit("足球")])
    toolset = Toolset(TOOLS, run_echo, reminder="call submit_answer")
    await ToolLoop().run(model, [], toolset, only("足球"), EvidenceLedger(), TurnTrace(model="scripted"))
    assert model.calls[1][0][-1] == {"role": "system", "content": "call submit_answer"}
    assert json.loads(model.calls[2][0][-1]["content"])["error"] == "MALFORMED_JSON"


async def test_no_submission_within_the_call_budget_gives_up():
    model = ScriptedModel([ModelReply(tool_calls=[call("echo", '{"word": "a"}')])] * 3)
    with pytest.raises(GiveUp, match="within 3 model calls"):
        await ToolLoop(max_model_calls=3).run(model, [], Toolset(TOOLS, run_echo), only("a"), EvidenceLedger(),
                                              TurnTrace(model="scripted"))
