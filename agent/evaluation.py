"""The dialogue evaluation: conversations as customers type them, each turn with machine checks
(texts that must / must not appear in the answer), run through the real turn loop with memory, and
the pass rate per family. `python bot.py eval-dialogues`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from agent.memory import InProcessMemory, Turn

# The shipped sets: the original scenarios and the understanding train split are `train` (tuned on); the
# understanding test splits were written by authors who never read the code, and are frozen (DESIGN.md,
# wave-3 contracts): the first before issue 19's work, the second (test2, 144 dialogues) on 2026-12-02, from
# the families' description and the seed data alone, when the first had been brought to 100% family by family
# (its first run, at that day's start 3d616dd: 89.6%); the third (test3, 168 dialogues over 14 families, two of them
# new: after-sales and the customer's own orders) the same way on 2026-12-02 evening (first run at 57131ea: 87.5%);
# test4 (72) and test5 (72) on 2026-12-06 from the demo catalog alone (first runs 62.5% and, at ab84ca1, 61.1%);
# test6 (84, seven families) the same way that evening (first run at a3f934d: 85.7%); test7 (84: colloquial names,
# misspellings, described needs, two questions, follow-ups, near misses, chatty messages) the same way in the next
# sitting (first run at 940c374: 71.4%); test8 (84: other names, typos, needs, categories, conversations, things not
# sold, stories) at that sitting's last hour, after its work (first run at 41bc327: 77.4%; 69.0% at 940c374);
# test9 (108: two questions, goods for someone, budgets, comparisons, follow-ups, colloquial names, described
# needs, and two new families — an open request naming nothing, and one narrowed in the next turn) by two helpers
# at the start of the ninth sitting, before its work (first run at 6160a27: 61.1%, the open requests 0 of 24);
# test10 (60: open requests, a product with a policy, with its promotion, comparisons, budgets) by a third helper
# after most of that sitting's work, to see how far its fixes carry (first run at 05dff7f: 90.0%; 63.3% at 6160a27);
# test11 (72: a thing ruled out, the cheapest/dearest/fullest of a kind, a correction of which product was meant,
# a fact stated to be confirmed, voice-input rambling, and the person whose level or age decides the product) by
# a helper who read only the demo catalog, at the start of the tenth sitting (first run at 52dde52: 65.3%);
# test12 (62: the same families but voice-input rambling, plus a list narrowed by two or three constraints) by
# another helper the same way after test11 was brought to 100%, to see how far those fixes carry (first run at
# 4605fc9: 71.0%; 56.5% at 52dde52); test13 (58: the same six families, inventive wording, lists just shown
# narrowed) by a third helper the same way after test12 was mended (first run at a66c0b6: 70.7%; 48.3% at 52dde52);
# test14 (60: those families plus two questions, open requests and follow-ups) by a fourth helper at the sitting's
# end, after test13 was mended (first run at 5aa2bf4: 78.3%; 65.0% at 52dde52); test15 (60: an item picked from a
# list just shown, English words and slang in Chinese, Traditional script and Cantonese, questions asked in the
# negative, quantities, typos inside a sentence) by a helper who read only the demo catalog, at the start of the
# eleventh sitting (first run at 9f7f7d9: 75.0%); test16 (60: the same six families, no pick by position) by
# another helper the same way after test15 was mended (first run at d71dc11: 85.0%; 75.0% at 9f7f7d9); test17 (60:
# those six families plus two questions and follow-ups) by a third helper after test16 was mended (first run at
# a3c1c1a: 93.3%; 80.0% at 9f7f7d9); test18 (60: a broad mix — colloquial names, two questions, follow-ups, described
# needs, things not sold, goods for someone, budgets, policies, promotion arithmetic, messy writing) by a helper who
# read only the demo catalog, at the start of the twelfth sitting (first run at 3d13a09: 88.3%); test19 (60: shopping
# trips over several turns, attributes, comparisons, corrections, promotions, enough stock, brands, first purchases,
# vague then clear, two questions) by another helper the same way after test18 was mended (first run at ef8978a:
# 91.7%, and 91.7% at 3d13a09); test20 (60: other names, described needs, follow-ups, two questions, budgets, goods for
# someone, things not sold, corrections, comparisons, quantities under a promotion, written as many kinds of people) by
# a third helper the same way after test19 was mended (first run at b9c1007: 81.7%, and 81.7% at 3d13a09; 88.3% with
# four labels the helper wrote as "324.0元" mended to the bot's "324元", no phrasing changed); test21 (60: conversations
# of two or three turns — browse then narrow, a product then a policy, compare then choose, gifts, not sold then an
# alternative, quantities changed, a spec then the price, messy writing, two questions, described needs) by a fourth
# helper after test20 was mended (first run at 46d796b: 81.7%, and 81.7% at 3d13a09); test22 (60: the customer's own
# orders, after-sales worries, an order then a product, exclusions, the user's level or age, English mixed in, typos,
# near misses, two questions, group purchases and budgets) by a helper who read only the demo catalog and the
# customer's two orders, at the start of the thirteenth sitting (first run at c0ed0a1: 73.3%); test23 (60: own orders,
# after-sales, exclusions, level or age, a sport then a kind of goods, group budgets, kinds as follow-ups, near misses,
# two questions, messy writing) by another helper the same way after test22 was mended (first run at 79c4a65: 78.3%);
# test24 (60 conversations of two to four turns: an order then more, browse then pick, compare then buy, kinds in
# context, not sold then related, policy chains, quantities under a promotion, corrections, the person then the goods,
# messy) by a third helper after test23 was mended (first run at 9551496: 50.0%; 40.0% at c0ed0a1); test25 (60
# conversations of two to four turns: an order then more, browse then pick, compare then buy, a need told over turns,
# not sold then related, policy chains, quantities under a promotion, corrections, a topic left and come back to,
# messy) by a helper who read only the demo catalog and the customer's orders, at the start of the fourteenth sitting
# (first run at a490090: 60.0%); test26 (60 conversations over the same ten families, across many more products) by
# another helper the same way after test25 was mended (first run at cf05907: 76.7%; 66.7% at a490090); test27 (60
# conversations of two to four turns: two questions in one message, the person behind it, a product described not
# named, own orders, compare then choose, not sold then related, a policy and facts told, a mind changed, budgets and
# groups, messy writing — across all 55 products) by a helper who read only the demo catalog and the customer's
# orders, at the start of the fifteenth sitting (its first run at 10cc039 stopped on an error; 71.7% with that line
# mended); test28 (60 more over the same ten families, as many kinds of people, phrased less obviously) by another
# helper the same way after test27 was mended (first run at 7320130: 70.0%); test29 (60 more over the same ten
# families, as many kinds of people, phrased as real customers type on a phone) by a helper who read only the demo
# catalog and the customer's orders, at the start of the sixteenth sitting.
SHIPPED = ("dialogues.jsonl", "dialogues-understanding-train.jsonl", "dialogues-understanding-test.jsonl",
           "dialogues-understanding-test2.jsonl", "dialogues-understanding-test3.jsonl",
           "dialogues-understanding-test4.jsonl", "dialogues-understanding-test5.jsonl",
           "dialogues-understanding-test6.jsonl", "dialogues-understanding-test7.jsonl",
           "dialogues-understanding-test8.jsonl", "dialogues-understanding-test9.jsonl",
           "dialogues-understanding-test10.jsonl", "dialogues-understanding-test11.jsonl",
           "dialogues-understanding-test12.jsonl", "dialogues-understanding-test13.jsonl",
           "dialogues-understanding-test14.jsonl", "dialogues-understanding-test15.jsonl",
           "dialogues-understanding-test16.jsonl", "dialogues-understanding-test17.jsonl",
           "dialogues-understanding-test18.jsonl", "dialogues-understanding-test19.jsonl",
           "dialogues-understanding-test20.jsonl", "dialogues-understanding-test21.jsonl",
           "dialogues-understanding-test22.jsonl", "dialogues-understanding-test23.jsonl",
           "dialogues-understanding-test24.jsonl", "dialogues-understanding-test25.jsonl",
           "dialogues-understanding-test26.jsonl", "dialogues-understanding-test27.jsonl",
           "dialogues-understanding-test28.jsonl", "dialogues-understanding-test29.jsonl")


@dataclass(frozen=True)
class Step:
    say: str
    must: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()

    def failures(self, answer: str) -> list[str]:
        return ([f"missing {m!r}" for m in self.must if m not in answer]
                + [f"has {m!r}" for m in self.must_not if m in answer])


@dataclass(frozen=True)
class Dialogue:
    family: str
    steps: tuple[Step, ...]
    variant: str = "plain"
    split: str = "train"
    source: str = ""   # the set it was read from (a test split of its own is reported apart)


@dataclass
class Outcome:
    dialogue: Dialogue
    answers: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def load_dialogues(path: Path | None = None) -> list[Dialogue]:
    """Read a JSON Lines set: {"family", "variant", "split", "turns": [{"say", "must", "must_not"}]} per
    line; without a path, every shipped set."""
    if path is None:
        folder = resources.files("agent") / "evalsets"
        return [d for name in SHIPPED for d in _parse((folder / name).read_text(encoding="utf-8"), name)]
    return _parse(Path(path).read_text(encoding="utf-8"), str(path))


def _parse(text: str, where: str) -> list[Dialogue]:
    dialogues = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw: dict[str, Any] = json.loads(line)
            steps = tuple(Step(t["say"], tuple(t.get("must", ())), tuple(t.get("must_not", ()))) for t in raw["turns"])
            split = str(raw.get("split", "train"))
            if split not in ("train", "test"):
                raise ValueError(f"split must be train or test, not {split!r}")
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} line {number}: not a dialogue ({exc})") from None
        dialogues.append(Dialogue(str(raw.get("family", "other")), steps, str(raw.get("variant", "plain")), split,
                                  Path(where).name))
    return dialogues


async def run_dialogues(agent: Any, dialogues: Iterable[Dialogue], user_id: str = "console") -> list[Outcome]:
    """Each dialogue in a fresh conversation; every turn's answer checked."""
    outcomes = []
    for number, dialogue in enumerate(dialogues):
        store, chat = InProcessMemory(warn=False), f"eval-{number}"
        outcome = Outcome(dialogue)
        for step in dialogue.steps:
            result = await agent.answer(step.say, user_id=user_id, memory=await store.load(chat))
            await store.append(chat, Turn(step.say, result.answer), result.focus_product_ids, result.quantity)
            outcome.answers.append(result.answer)
            outcome.failures += [f"{step.say}: {f}" for f in step.failures(result.answer)]
        outcomes.append(outcome)
    return outcomes


def report(outcomes: list[Outcome], show_failures: bool = False) -> str:
    """Pass rate per family and overall, for each split (train: tuned on; test: frozen, held out);
    optionally each failed dialogue with its answers."""
    lines = []
    tests = list(dict.fromkeys(o.dialogue.source for o in outcomes if o.dialogue.split == "test"))
    # train sets together; each test set apart when there are several (each was frozen at its own date)
    groups = [("train", None)] + ([("test", None)] if len(tests) <= 1 else [("test", t) for t in tests])
    for split, source in groups:
        chosen = [o for o in outcomes if o.dialogue.split == split and source in (None, o.dialogue.source)]
        if not chosen:
            continue
        families: dict[str, list[bool]] = {}
        for o in chosen:
            families.setdefault(o.dialogue.family, []).append(o.passed)
        lines += ["" if lines else None, f"split: {split}" + (f" ({source})" if source else ""),
                  f"{'family':16s} {'n':>4s} {'passed':>8s}"]
        for family, results in sorted(families.items()):
            lines.append(f"{family:16s} {len(results):4d} {sum(results) / len(results):8.1%}")
        total = [o.passed for o in chosen]
        lines.append(f"{'overall':16s} {len(total):4d} {sum(total) / max(len(total), 1):8.1%}")
    lines = [line for line in lines if line is not None]
    if show_failures:
        for o in outcomes:
            if not o.passed:
                lines.append(f"\n[{o.dialogue.split}/{o.dialogue.family}/{o.dialogue.variant}] " + "; ".join(o.failures))
                lines += [f"    {s.say} → {a}" for s, a in zip(o.dialogue.steps, o.answers, strict=False)]
    return "\n".join(lines)
