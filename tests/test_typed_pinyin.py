"""Pinyin typed for Chinese (agent/typed_pinyin.py): what it spells is read, anything else stays as written."""

from __future__ import annotations

import pytest

from agent.typed_pinyin import Lexicon, may_be_pinyin, segmentations, spelled_out

_BUILT: list[Lexicon] = []


@pytest.fixture
async def lexicon(vocabulary):
    """The demo shop's lexicon, built once for the module (its words do not change between tests)."""
    if not _BUILT:
        _BUILT.append(Lexicon.of(frozenset({*vocabulary.names, *vocabulary.brands, *vocabulary.categories})))
    return _BUILT[0]


def test_a_token_falls_into_syllables_or_is_no_pinyin():
    assert ("wang", "qiu") in segmentations("wangqiu")
    assert segmentations("xian")[0] == ("xian",) and ("xi", "an") in segmentations("xian")   # fewest first
    assert segmentations("gym") == [] and segmentations("xl") == []


@pytest.mark.parametrize(("typed", "read"), [
    ("lan qiu xie you huo ma", "篮球鞋有货吗"),          # a syllable per word, spaces between
    ("wangqiupai zenme mai", "网球拍怎么卖"),             # words run together
    ("bao wen bei多少钱", "保温杯多少钱"),               # pinyin, then Chinese
    ("请问hu腕还有吗", "请问护腕还有吗"),                # one syllable inside a word, anchored by the character after it
    ("乒乓qiu多少钱一盒", "乒乓球多少钱一盒"),             # …and by the characters before it
    ("ke yi tui huo ma", "可以退货吗"),
])
async def test_pinyin_is_read_as_the_chinese_it_spells(lexicon, typed, read):
    assert spelled_out(typed, lexicon) == read


@pytest.mark.parametrize("written", [
    "how much is the yoga mat", "yoga mat多少钱", "XL码有吗", "PU皮的吗", "u1s1这个跳绳好用吗", "can I pay with alipay",
    "Keep的瑜伽垫", "hi 在吗", "ok的 谢谢", "long", "see you", "跳绳 50 yuan 以内有吗",
])
async def test_english_sizes_codes_and_brands_stay_as_written(lexicon, written):
    assert spelled_out(written, lexicon) == written


def test_a_message_without_pinyin_needs_no_lexicon():
    assert not may_be_pinyin("瑜伽垫多少钱") and not may_be_pinyin("XL码") and may_be_pinyin("yumaoqiu")
