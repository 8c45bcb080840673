"""One model⇄tool loop for every model-written answer: the customer turn and the operators' /ask.

One retry budget, one submit rule: the model calls tools (typed results, shown to it as JSON) until it
calls submit_answer; the submission is released only when the check passed in accepts it (the validator
for customers, the report checker for operators), otherwise the check's reasons go back to the model.
Too many rejections, or no submission within the call budget, ends the loop with `GiveUp`."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from agent.context import TurnContext
from agent.models import ChatModel, Message
from agent.tools import SubmitAnswer, ToolError, parse_arguments, to_json, tool_schemas
from agent.trace import ToolTrace, TurnTrace, VerdictTrace
from guardrails.ledger import EvidenceLedger
from guardrails.validator import Verdict

USE_SUBMIT = ("Your reply was not delivered. Call submit_answer with the answer, the evidence ids it rests on "
              "and a status; plain text never reaches the customer.")


class GiveUp(Exception):
    """The model will not produce a releasable answer in this loop."""


@dataclass
class Toolset:
    """What a loop offers the model: the tools by name (their argument models, submit_answer included),
    how a parsed call runs (a typed result), and the reminder sent when the model forgets to submit."""

    tools: dict[str, type[BaseModel]]
    run: Callable[[str, BaseModel], Awaitable[object]]   # (tool name, parsed arguments) → typed result
    reminder: str = USE_SUBMIT
    schemas: list[dict[str, Any]] = field(init=False)

    def __post_init__(self) -> None:
        self.schemas = _schemas(tuple(self.tools.items()))


@lru_cache(maxsize=8)
def _schemas(tools: tuple[tuple[str, type[BaseModel]], ...]) -> list[dict[str, Any]]:
    """Each tool set's schemas, built once per process: a toolset is made per turn, its schemas are not."""
    return tool_schemas(dict(tools))


@dataclass(frozen=True)
class Released:
    """A submission the check accepted."""

    answer: str
    citations: list[str]
    status: str


@dataclass
class ToolLoop:
    max_model_calls: int = 6
    max_rejections: int = 2

    async def run(self, model: ChatModel, messages: list[Message], toolset: Toolset,
                  check: Callable[[SubmitAnswer], Verdict], ledger: EvidenceLedger, trace: TurnTrace,
                  context: TurnContext | None = None) -> Released:
        """Drive `model` until `check` accepts a submission; `messages` grows with the exchange. The
        context (the customer turn's typed dependency) is passed to the model and records each result."""
        rejections = 0
        for call_number in range(self.max_model_calls):
            asked = time.perf_counter()
            reply = await model.complete(messages, toolset.schemas, "required" if call_number == 0 else "auto",
                                         context=context)
            trace.model_ms += (time.perf_counter() - asked) * 1000
            trace.count_reply(reply)
            messages.append(reply.as_message())
            if not reply.tool_calls:
                rejections += 1
                trace.verdicts.append(VerdictTrace(False, ["NO_SUBMISSION"], model.name))
                if rejections > self.max_rejections:
                    raise GiveUp("the model kept answering without submit_answer")
                messages.append({"role": "system", "content": toolset.reminder})
                continue
            for tool_call in reply.tool_calls:
                started = time.perf_counter()
                try:
                    args = parse_arguments(tool_call.name, tool_call.arguments, toolset.tools)
                    if isinstance(args, SubmitAnswer):
                        verdict = check(args)
                        trace.validation_ms += (time.perf_counter() - started) * 1000
                        trace.verdicts.append(VerdictTrace(verdict.ok, verdict.codes, model.name, args.answer[:3000],
                                                           "" if verdict.ok else verdict.message[:2000]))
                        if verdict.ok:
                            return Released(args.answer.strip(), list(dict.fromkeys(args.citation_ids)),
                                            args.status)
                        rejections += 1
                        if context is not None:
                            context.rejections += 1
                        if rejections > self.max_rejections:
                            raise GiveUp(f"answer rejected {rejections} times ({', '.join(verdict.codes)})")
                        result: object = {"accepted": False, "reasons": verdict.codes, "message": verdict.message}
                    else:
                        before = set(ledger.entries)
                        result = await toolset.run(tool_call.name, args)
                        if context is not None:
                            context.results.append((tool_call.name, result))
                        trace.tool_calls.append(ToolTrace(
                            tool_call.name, args.model_dump(), str(getattr(result, "status", "")),
                            round((time.perf_counter() - started) * 1000, 2),
                            [e for e in ledger.entries if e not in before]))
                except ToolError as exc:
                    result = exc.as_result()
                    trace.tool_calls.append(ToolTrace(tool_call.name, tool_call.arguments[:500], exc.code,
                                                      round((time.perf_counter() - started) * 1000, 2)))
                content = to_json(result) if getattr(model, "reads_json", True) else "(typed result in the turn context)"
                messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": content})
        raise GiveUp(f"no releasable answer within {self.max_model_calls} model calls")
