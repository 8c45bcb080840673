"""A message that leans on the conversation: what a bare follow-up (那排球呢) or the reply to "which product?"
(就泳镜) asks — the questions the conversation asked before, carried over to what it names now."""

from __future__ import annotations

import re

from agent.intent import ASK_PATTERNS, Ask, elliptical, reading
from agent.vocabulary import Vocabulary

# The product questions a follow-up carries over from the message before it.
CARRIED = frozenset({"price", "promotion", "stock", "attribute", "compare", "basket"})
_PARTICLES = re.compile(r"那么|那|要是|如果|换成|改成|还有|呢|嘞|咧|的|[\s，,。？?！!]")


def bare_follow_up(text: str, vocabulary: Vocabulary) -> bool:
    """An elliptical message that is only what it names and particles (那乒乓球拍呢): all it asks is what the
    conversation asked before, so the router's reading of its few words says nothing."""
    folded = reading(text)
    if vocabulary.pattern is None \
            or not (re.match("那", folded) or re.search("(?:呢|嘞|咧)[？?]*$", folded) or elliptical(text)):
        return False   # (by its ends, not only `elliptical`: 那GPS心率运动手表呢 is past that pattern's length)
    # a brand before the name says which product (那Keep的泡沫轴呢), no question of its own
    brands = [b.lower() for b in vocabulary.brands_in(folded)]
    return _names_and(_PARTICLES, re.sub("|".join(map(re.escape, brands)), "", folded) if brands else folded,
                      vocabulary)


def names_only(text: str, vocabulary: Vocabulary) -> bool:
    """A message that is only the names it holds, with particles (羽毛球网架, 就壶铃, 要护腿板吧): the reply
    to "which product?" asks nothing of its own."""
    return vocabulary.pattern is not None and _names_and(_NAME_FILLER, reading(text), vocabulary)


def _names_and(filler: re.Pattern[str], folded: str, vocabulary: Vocabulary) -> bool:
    """The message holds a name, and nothing else but `filler` (particles, 就/要/是…)."""
    rest = vocabulary.pattern.sub("", folded) if vocabulary.pattern is not None else folded
    return rest != folded and not filler.sub("", rest)


_NAME_FILLER = re.compile(r"我说的是|我问的是|我要|就是|就|要|是|那个|这个|吧|啦|呀|哦|嗯|[\s，,。？?！!~～]")


def answering_which(labels: frozenset[str], previous: frozenset[str]) -> frozenset[str]:
    """The reply to "which product?" (哦 我说的是泳镜): it asks what the message before the question asked
    (after 能便宜点吗: its price and promotions), and anything it asks itself."""
    bargain = frozenset({"price", "promotion"}) if "bargain" in previous else frozenset()
    return labels | (previous & CARRIED) | bargain


def carry_over(labels: frozenset[str], previous: frozenset[str], text: str = "") -> frozenset[str]:
    """The labels of a message that leans on the conversation: the previous message's product questions,
    and this one's own product and policy questions (not first purchase: 第一个 is a position); readings
    of a few words as pleasantries, bargaining or chit-chat are dropped. A question about the customer's own
    order that says so in words (`text`: 我那个瑜伽垫到哪了, 买足球那个订单) is the message's own: 那个 points at
    their order, and nothing of the product is asked."""
    if "order_status" in labels and ASK_PATTERNS[Ask.ORDER].search(reading(text)):
        return frozenset({"order_status"} | {label for label in labels if label.startswith("policy:")})
    own = {label for label in labels if label in CARRIED
           or label.startswith("policy:") and label != "policy:first-purchase"}
    carried = (previous & CARRIED) | own
    return frozenset(carried or {"price"})


def policy_carried(text: str, labels: frozenset[str], previous: frozenset[str], has_focus: bool) -> frozenset[str]:
    """An elliptical follow-up to a policy question, with no product discussed (那要是支付宝付的呢 after 银行卡付的退款
    多久到): the policy topics asked before, and this one's own; empty when it is no such follow-up."""
    before = {label for label in previous if label.startswith("policy:")}
    own = {label for label in labels if label.startswith("policy:")}
    said = bool(own) or bool(ASK_PATTERNS[Ask.POLICY].search(reading(text)))   # (运费: a policy's own word)
    if has_focus or not before or not elliptical(text) or labels & CARRIED and not said:
        return frozenset()   # (a product question of its own, 那个多少钱, is no policy follow-up; 那寄回去的运费谁出 is one)
    # (its few words read as thanks or chit-chat say nothing: 那银行卡呢 is no thanks)
    return frozenset(before | own)
