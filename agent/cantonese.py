"""Cantonese as it is typed (仲有冇货, 几多钱, 点卖, 呢对), read as the Mandarin every reader of a message knows: a
table of Cantonese words and their Mandarin ones, applied to a message already folded to simplified characters.
Only words that are Cantonese and nothing else in Mandarin are replaced — 呢 and 边 only before a measure word
(呢对 → 这对, 边款 → 哪款), 系 only in 系咪 and 系唔系 — so a Mandarin message reads as it did."""

from __future__ import annotations

import re

from agent.mentions import MEASURE_WORDS

# Cantonese → Mandarin, the longer words first where one holds another (有冇 before 冇, 系唔系 before 唔)
_WORDS = {
    "系唔系": "是不是", "系咪": "是不是", "可唔可以": "可不可以", "得唔得": "行不行", "仲有冇": "还有没有", "有冇": "有没有", "仲有": "还有",
    "仲系": "还是", "仲要": "还要", "几多": "多少", "几钱": "多少钱", "点卖": "怎么卖", "点样": "怎样", "点解": "为什么",
    "乜嘢": "什么", "咩": "什么", "而家": "现在", "几时": "什么时候", "唔该": "谢谢", "冇": "没", "唔": "不", "嘅": "的",
    "咗": "了", "啲": "些", "嗰": "那", "佢": "他", "畀": "给", "俾": "给", "睇": "看", "揾": "找", "瞓": "睡",
    "啱": "合适", "嚟": "来", "咁": "这么", "靓": "好看",
}
_CANTONESE = re.compile("|".join(sorted(map(re.escape, _WORDS), key=len, reverse=True))
                        + f"|呢(?=[{MEASURE_WORDS}对])|(?<![这那旁左右里外上下前后东西南北身海路周两一半])边(?=[{MEASURE_WORDS}对])")
_POINTERS = {"呢": "这", "边": "哪"}


def as_mandarin(text: str) -> str:
    """`text` (folded) with its Cantonese words written as Mandarin ones (仲有几多个 → 还有多少个)."""
    return _CANTONESE.sub(lambda m: _WORDS.get(m.group(0)) or _POINTERS[m.group(0)], text)
