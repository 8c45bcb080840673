"""Pointers at goods already shown: which products 那双鞋, 各来一个, 防崴脚那个 or 适合小孩踢的足球 mean, read
against the conversation's earlier answers and the product in focus. Used by the turn after the reader."""

from __future__ import annotations

import os
import re

import jieba.posseg

from agent.counts import for_each_person
from agent.intent import ASK_PATTERNS, Ask, Intent, noun_stem, reading
from agent.mentions import MEASURE_WORDS, is_amount, is_asking_verb, qualifiers
from agent.vocabulary import QUALITIES, Vocabulary
from retrieval.text import fold

# 那双鞋, 刚才那个包, 之前那款手表: a pointer with the kind of goods it points at
_POINTED_KIND = re.compile(r"[这那]\s*[个款双支件只张根盒把套条副瓶罐种样台顶块]\s*(?P<kind>[\u4e00-\u9fff]{1,4}?)"
                           r"(?=吗|呢|么|怎|多少|几|是|有|能|可以|适合|防|重|大|小|长|还|的|买|要|送|拿|来|[？?，,。！!\s]|$)")


# 各来一个, 两样都要: one (or the count written) of each product the conversation just went through.
_EACH = re.compile(r"各[来要买拿]|各[一两二三四五六七八九十\d]|[两俩二三]样都|[两俩二三]个都|都各|一样[来要买拿]?一")


def each_of_earlier(text: str, vocabulary: Vocabulary, earlier: list[str], focus: list[str]) -> tuple[str, ...]:
    """The products 各来一个 means: the two or three the last answer was about (a comparison), else the one
    each of the latest answers (`earlier`, oldest first) was about — the first product each names — when
    they are two or three different ones; () otherwise."""
    folded = reading(text)
    if not _EACH.search(folded) or vocabulary.pattern is None or for_each_person(folded):
        return ()   # (我和我弟各要一个: one each for two people, of the product in focus)
    return discussed_apart(vocabulary, earlier, focus)


# What a pointer's description leaves out: the pointer itself, words of asking and particles
_NOT_DESCRIBING = re.compile(f"[这那哪][{MEASURE_WORDS}]|还有|有没有|有吗|多少|几个|什么|啥|怎么|吗|呢|啊|呀|吧|哈|的$")


def pointer_description(text: str) -> str:
    """What a pointer at goods shown says of the one it means (防崴脚那个还有多少库存 → 防崴脚, 门将戴的那副多少钱 →
    门将戴的): the message without the pointer, the words of what is asked and particles; empty when nothing of two
    characters or more is left (这个多少钱)."""
    for ask in (Ask.PRICE, Ask.STOCK, Ask.PROMOTION, Ask.BRAND):   # an aspect may describe (能调重量那个)
        text = ASK_PATTERNS[ask].sub(" ", text)
    # words of two characters or more, no count (大的那个买五个, 那就它吧: nothing said of which)
    rest = _NOT_DESCRIBING.sub(" ", text)
    # a word of two characters or more naming a thing, an action, a property or a place (室外), not of asking or buying and no
    # count (就要它了, 你推荐的那个, 大的那个买五个: nothing said of which)
    described = any(len(w.word) >= 2 and w.flag[:1] in "nvas" and not is_asking_verb(w.word) and not is_amount(w.word)
                    for w in jieba.posseg.lcut(rest))
    return " ".join(rest.split()) if described else ""


def discussed_apart(vocabulary: Vocabulary, earlier: list[str], focus: list[str]) -> tuple[str, ...]:
    """The products just discussed: the two or three the last answer was about, else the one each of the latest
    answers (`earlier`, oldest first) was about — the first product each names — when they are two or three
    different ones (壶铃 / 哑铃呢); () otherwise."""
    if 2 <= len(focus) <= 3:
        return tuple(focus)
    if vocabulary.pattern is None:
        return ()
    shown: list[str] = []
    for answer in reversed(earlier[-3:]):
        first = next((vocabulary.product_of(m.group(0)) for m in vocabulary.pattern.finditer(fold(answer))), None)
        if first is None or first in shown:
            break
        shown.append(first)
    return tuple(reversed(shown)) if len(shown) >= 2 else ()


def pointed_kind(text: str, vocabulary: Vocabulary, focus: list[str], earlier: list[str]) -> tuple[str, ...]:
    """The products a pointer with a kind of goods may mean (刚才那双鞋防水吗 after a watch was shown): none when the
    product in focus is of that kind, else those of that kind the latest of the conversation's earlier answers
    naming any named, in its order (`earlier`: the bot's answers, oldest first; 安德玛那条裤子 after a list of
    clothes: 运动短裤 and 压缩紧身裤, of which the pointer's brand or description chooses). Empty: no such pointer,
    or no such product (the pointer then means what is in focus, as before)."""
    m = _POINTED_KIND.search(reading(text))
    if m is None or vocabulary.pattern is None:
        return ()
    kind = m.group("kind")
    kind = kind[:-1] if len(kind) > 1 and kind.endswith("子") else kind   # 鞋子, 垫子: the kind is 鞋, 垫
    if focus and vocabulary.of_kind(focus[0], kind):
        return ()   # the product in focus is of that kind: the pointer means it, as it always did
    for answer in reversed(earlier):
        named = [vocabulary.product_of(x.group(0)) for x in vocabulary.pattern.finditer(fold(answer))]
        if of_kind := tuple(pid for pid in dict.fromkeys(named) if vocabulary.of_kind(pid, kind)):
            return of_kind
    return ()


def discussed_of_kind(kind: str, vocabulary: Vocabulary, focus: list[str], earlier: list[str]) -> str | None:
    """The product a kind of goods written alone means after other goods (鞋还有几双 after 足球鞋, then 护腿板; 那球呢
    after 乒乓球拍): the one of that kind the latest answer naming any (`earlier`, oldest first) was about, when
    it named one only; else the one of that kind whose name shares the most with the product in focus, two
    characters at least (乒乓球拍 → 乒乓球), or the only one of that kind in the focus's category (裤子 after 泳镜), or
    in the shop (想再配个砖 after an order of 瑜伽垫). None: the kind is asked afresh."""
    if vocabulary.pattern is None:
        return None
    for answer in reversed(earlier):
        named = {vocabulary.product_of(x.group(0)) for x in vocabulary.pattern.finditer(fold(answer))}
        if kinds := [pid for pid in named if vocabulary.of_kind(pid, kind)]:
            return kinds[0] if len(kinds) == 1 else None
    of_kind = (vocabulary.ending_with(kind) | ({vocabulary.names[kind]} if kind in vocabulary.names else set())) \
        - set(focus)
    shared = [(len(os.path.commonprefix([name, own])), pid)
              for pid in of_kind if vocabulary.of_kind(pid, kind) for name in vocabulary.chinese_names.get(pid, ())
              for f in focus for own in vocabulary.chinese_names.get(f, ())]
    best = max((n for n, _ in shared), default=0)
    closest = {pid for n, pid in shared if n == best}
    if best >= 2 and len(closest) == 1:
        return closest.pop()
    # …else the one of that kind filed in the focus's category (裤子 after 防雾泳镜: 男士泳裤, of 游泳), if one only
    filed = {vocabulary.category_by_product.get(f) for f in focus} - {None}
    same = [pid for pid in of_kind if vocabulary.of_kind(pid, kind) and vocabulary.category_by_product.get(pid) in filed]
    if len(same) == 1:
        return same[0]
    only = [pid for pid in of_kind if vocabulary.of_kind(pid, kind)]   # …or the shop's only one (砖: 瑜伽砖)
    return only[0] if len(only) == 1 else None


def meant_by_kind(kind: str, vocabulary: Vocabulary, focus: list[str], earlier: list[str]) -> str | None:
    """The product a kind of goods written alone means in a conversation: the one in focus when it is of that kind,
    else the one discussed (`discussed_of_kind`)."""
    return next((pid for pid in focus if vocabulary.of_kind(pid, kind)), None) \
        or discussed_of_kind(kind, vocabulary, focus, earlier)


def qualified(asked: Intent, vocabulary: Vocabulary) -> dict[str, tuple[str, ...]]:
    """Products named by a word that longer names end with, where the words before it say what it is
    for or whom (适合小孩踢的足球, 室外打的篮球): each such product → those words with the name (the
    query), then the products the customer may mean, itself first. Which one they mean is for the embedder to judge (the turn asks the search)."""
    choices: dict[str, tuple[str, ...]] = {}
    ignored = {b.lower() for b in vocabulary.brands} | set(QUALITIES)
    since = 0
    for word in asked.named:   # in the order written: each looked for after the one before it
        start = asked.text.find(word, since)
        if start < 0:
            continue
        before, since = since, start + len(word)
        if word not in vocabulary.names or not (others := vocabulary.ending_with(word)):
            continue
        own = vocabulary.names[word]
        # (of those the customer has not ruled out: 想给孩子买个足球，阿迪的就算了 — not the Adidas youth ball)
        others = {pid for pid in others if not asked.ruled_out.excludes(pid, vocabulary.brand_of.get(pid))}
        words = [w for w in qualifiers(asked.text, start, before) if w not in ignored]
        if own in asked.products and words:
            choices[own] = (" ".join([*words, word]), own, *sorted(others - set(asked.products)))
    return choices


_JOINED = re.compile(r"和|跟|与|及|、|还有|以及")


def kinds_joined(text: str, vocabulary: Vocabulary) -> tuple[str, ...]:
    """Kinds of goods written alone and joined (那拍子和球分别多少钱, 鞋跟袜子呢): each piece one noun whose stem ends
    product names (拍子 → 拍, 球); () unless there are two or more such pieces and nothing else names goods.
    `text`: the message as the reader folded it (`Intent.text`)."""
    pieces = [p for p in _JOINED.split(text) if p.strip()]
    if len(pieces) < 2:
        return ()
    kinds = []
    for piece in pieces:
        found = [noun_stem(w.word) for w in jieba.posseg.lcut(piece)
                 if w.flag.startswith("n") and len(w.word) <= 2 and noun_stem(w.word) in vocabulary.name_endings]
        if len(found) != 1:
            return ()
        kinds.append(found[0])
    return tuple(kinds)


def category_as_kind(text: str, vocabulary: Vocabulary) -> str:
    """The kind of goods a category word names as written in a follow-up (衣服呢 多少钱 → 服, 那裤子呢 → 裤): its
    stem, or the stem's last character, when product names end with it; "" when none does, or no category word is
    followed by 呢. `text`: the message as the reader folded it (`Intent.text`)."""
    folded = text
    found = vocabulary.category_pattern.search(folded) if vocabulary.category_pattern is not None else None
    if found is None or folded[found.end():found.end() + 1] not in ("呢", "嘞"):
        return ""
    stem = noun_stem(found.group(0))
    kind = stem if stem in vocabulary.name_endings else stem[-1:]
    return kind if kind in vocabulary.name_endings else ""
