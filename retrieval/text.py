"""Chinese text folding and tokenizing for retrieval: NFKC, lower case, traditional → simplified,
jieba words, pinyin for input-method typos, and English brand names mapped to the Chinese ones."""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import jieba
import opencc
from pypinyin import lazy_pinyin

jieba.setLogLevel(logging.WARNING)

BRAND_ALIASES = {
    "nike": "耐克", "adidas": "阿迪达斯", "yonex": "尤尼克斯", "spalding": "斯伯丁", "decathlon": "迪卡侬",
    "li-ning": "李宁", "lining": "李宁", "li ning": "李宁", "wilson": "威尔胜", "mikasa": "米卡萨",
    "dhs": "红双喜", "head": "海德", "salomon": "萨洛蒙", "asics": "亚瑟士", "kailas": "凯乐石",
    "keep": "Keep", "lululemon": "露露乐蒙", "mcdavid": "麦克戴维", "giant": "捷安特", "micro": "米高",
    "thermos": "膳魔师", "speedo": "速比涛", "arena": "阿瑞娜", "anta": "安踏", "under armour": "安德玛",
    "ua": "安德玛", "garmin": "佳明", "black diamond": "黑钻", "mobi garden": "牧高笛", "puma": "彪马",
}

# How a having question ends, as words of their own: jieba glues 有 to the word before (鞋有, 表有, 带有).
ASKING = ("有吗", "有么", "有嘛", "有没有", "有木有", "有冇", "有卖", "有啥")
STOPWORDS = frozenset(ASKING) | frozenset(
    "的 了 吗 呢 吧 啊 呀 嘛 么 我 你 您 他 她 它 我们 你们 想 要 想要 需要 有 有没有 没有 是 不是 在 和 与 或 及 "
    "请问 请 问 一下 一个 个 什么 怎么 怎样 如何 哪个 哪些 哪款 哪种 多少 多少钱 钱 价格 价钱 售价 卖 卖不卖 买 "
    "推荐 介绍 能 可以 可 吗? 店里 店 本店 你们家 贵店 用 用的 给 找 还 也 都 就 很 太 比较 挺 啥 这 那 这个 那个 "
    "款 种 件 些 点 上 下 里 时 时候 "
    # asking words (想问下, 咨询下, 打听一下): how the customer asks, not what
    "问下 问问 想问 咨询 打听 打听一下 请教 "
    # whether it is in stock is the question, not the thing asked for (篮球有货吗, 还有没有货, 现在有现货没)
    "有货 货 现货 存货 库存 没货 缺货 到货 补货 还有 现在 目前 没 the a an for of to and with in on "
    # particles as people type them, Cantonese ones too (发带还有货冇: 冇 is 没有)
    "冇 咩 唔 嘅 啲 咗 嘞 啦 呗 咯 喔 哦".split()
)
_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)
_converter = opencc.OpenCC("t2s")
_tokenizer_lock = threading.Lock()


def fold(text: str) -> str:
    """NFKC, lower case, traditional → simplified, English brand names → the catalog's Chinese ones."""
    text = _converter.convert(unicodedata.normalize("NFKC", text or "").lower())
    for alias, brand in BRAND_ALIASES.items():
        if alias in text and re.search(rf"(?<![a-z]){re.escape(alias)}(?![a-z])", text):
            text = f"{text} {brand.lower()}"
    return text


def is_han(char: str) -> bool:
    """A Chinese character (the CJK Unified Ideographs block)."""
    return "\u4e00" <= char <= "\u9fff"


def has_han(text: str) -> bool:
    return any(map(is_han, text))


def compact(text: str) -> str:
    """Folded text with whitespace and punctuation removed, for substring matching."""
    return _PUNCT.sub("", fold(text))


@lru_cache(maxsize=4096)
def pinyin_of(text: str) -> str:
    """Toneless pinyin of the Chinese characters, space separated ('篮球' → 'lan qiu')."""
    return " ".join(p for p in lazy_pinyin(text, errors="ignore") if p.strip())


def plain_words(text: str) -> list[str]:
    """Words by jieba's own dictionary alone (no catalog words): how a customer's compound reads."""
    with _tokenizer_lock:
        jieba.initialize()
    return [w for w in jieba.lcut(fold(text)) if w.strip() and not _PUNCT.fullmatch(w)]


# a noun's suffix, naming nothing of its own (鞋子 is 鞋, 盒儿 is 盒)
NOUN_SUFFIXES = "子儿"


def known_word(word: str) -> bool:
    """Whether jieba's own dictionary (no catalog words) holds `word` as a word."""
    with _tokenizer_lock:
        jieba.initialize()
    return bool(jieba.dt.FREQ.get(word))


class Tokenizer:
    """jieba with the catalog's product names and brands added as words; stopwords dropped."""

    def __init__(self, extra_words: Iterable[str] = ()):
        with _tokenizer_lock:
            jieba.initialize()
        # a copy of the default tokenizer's dictionary (jieba's own attributes), not a second load of it from
        # disk: ~0.8 s less at every start, and the catalog's words below never reach plain_words()
        self._jieba = jieba.Tokenizer()
        self._jieba.FREQ, self._jieba.total = dict(jieba.dt.FREQ), jieba.dt.total
        self._jieba.initialized = True
        for word in extra_words:
            word = compact(word)
            if len(word) >= 2:
                self._jieba.add_word(word, freq=20000)
        for word in ASKING:   # 跑步鞋有吗 is 跑步鞋 + 有吗, not jieba's 鞋有 (导汗带有没有: not 带有, to carry)
            self._jieba.add_word(word, freq=20000)

    def words(self, text: str) -> list[str]:
        """Precise-mode words (no overlapping sub-words), stopwords kept: for word-order checks."""
        return [w for w in self._jieba.lcut(fold(text)) if w.strip() and not _PUNCT.fullmatch(w)]

    def tokens(self, text: str) -> list[str]:
        return self.folded_tokens(fold(text))

    def folded_tokens(self, folded: str) -> list[str]:
        """`tokens` of a text already folded."""
        words = self._jieba.lcut_for_search(folded)
        return [w for w in (w.strip() for w in words) if w and w not in STOPWORDS and not _PUNCT.fullmatch(w)]
