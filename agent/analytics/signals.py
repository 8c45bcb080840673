"""Signs that the bot misunderstood a customer, beside the verified rate (which only says nothing unverified
was said). A turn's own signs are known when it is recorded: it ended in the safe fallback, or it said
"not sold / not found" while retrieval's best candidate was confident. Others are known only from what the
customer does next, and flag the turn before: they say it was wrong (不对, 听不懂, 答非所问), they ask the same
thing again in other words within two turns (embedding similarity), they press 👎, they ask for a person.
The audit store attaches those to the earlier turn (db/audit_store.py)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

NOT_FOUND_BUT_CONFIDENT = "not_found_but_confident"
FALLBACK = "fallback"
REPHRASED = "rephrased"
NEGATIVE_REPLY = "negative_reply"
THUMBS_DOWN = "thumbs_down"
HUMAN_AFTER_ANSWER = "human_after_answer"
FLAGS = (NOT_FOUND_BUT_CONFIDENT, FALLBACK, REPHRASED, NEGATIVE_REPLY, THUMBS_DOWN, HUMAN_AFTER_ANSWER)

# an answer saying the shop has no such thing
_NOT_FOUND = re.compile("没有销售|没有找到|暂无此|不销售|没有这(?:款|个|种)|未找到|查不到|没有卖")
# the customer saying the answer missed: the whole message, or how it starts (不是 alone is often a question)
_NEGATIVE = re.compile("不对|不是这个|不是我(?:要|问|说)的|听不懂|没听懂|答非所问|理解错|说错了|牛头不对马嘴|文不对题|"
                       "^\\s*(?:不是|错了|不对)[啊呀吧呢。！!，,\\s]*$")
# the local E5 model's cosine between two customer messages: paraphrases of one question score 0.95–0.99,
# different questions on one product (篮球有什么优惠 / 篮球多少钱) up to about 0.955 (tests/test_misunderstood.py)
REPHRASE_SIMILARITY = 0.96
# retrieval's best candidate is confident when the customer wrote its name, or at this fused score
CONFIDENT_SCORE = 0.8

Vector = Callable[[str], Awaitable[np.ndarray | None]]


def says_not_found(answer: str) -> bool:
    return bool(_NOT_FOUND.search(answer or ""))


def is_negative(text: str) -> bool:
    return bool(_NEGATIVE.search(text or ""))


async def own_flags(text: str, answer: str, fallback: bool, search: Any | None) -> tuple[str, ...]:
    """The turn's own signs. `search`: the product search (its best candidate for the customer's text)."""
    flags = [FALLBACK] if fallback else []
    if says_not_found(answer) and search is not None:
        try:
            best = await search.search(text, top_k=1)
        except Exception:   # noqa: BLE001 - a sign is never worth a failed turn
            best = []
        if best and (best[0].product_name in text or best[0].retrieval_score >= CONFIDENT_SCORE):
            flags.append(NOT_FOUND_BUT_CONFIDENT)
    return tuple(flags)


async def previous_flags(text: str, earlier: Sequence[str], vector: Vector | None) -> tuple[str, ...]:
    """Signs about the answer before this message: `earlier` are the customer's previous messages, oldest
    first (the last two are compared); `vector` embeds a message (None: no embedder, no rephrase sign)."""
    flags = [NEGATIVE_REPLY] if is_negative(text) else []
    recent = [m for m in earlier[-2:] if m.strip()]
    if recent and vector is not None and not flags:
        try:
            mine = await vector(text)
            others = [await vector(m) for m in recent]
        except Exception:   # noqa: BLE001
            mine = None
        if mine is not None and any(o is not None and float(np.dot(mine, o)) >= REPHRASE_SIMILARITY for o in others):
            flags.append(REPHRASED)
    return tuple(flags)
