"""What a customer rules out (除了耐克, 斯伯丁的不要, 不是瑜伽垫, 鞋子就算了): the products, brands and kinds of goods a
message says it does not want, so that the rest is what it asks about — a list without them, or, in a correction
(不是手表，我问的是跑步腰包), the other product it names.

A marker (不要, 除了, 不是, 不考虑, 算了…) rules out what its clause names right after it (不要耐克的) or, when nothing is
named there, right before it (耐克阿迪的不考虑, 帐篷我就不要了). A category is never ruled out: it is where the rest is
looked for (户外用品里帐篷我就不要了)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# Three ways to rule a thing out: not wanting it (不要, 不考虑, 用不上, 腻了, 太贵了, 不合脚, pass, 别推荐), having it
# already or having tried it (我都有了, 都不缺, 自己有, 已经买过了, 穿过, 一大堆) and leaving it aside (除了, 除开, 刨去, 以外). 不要/不是 after 要/是 ask (要不要, 是不是耐克的);
# 不要太贵的 names nothing and so rules nothing out.
_MARKER = re.compile(
    r"除了|除开|除去|刨去|刨除|去掉|排除|以外|之外|除外|不算"
    r"|(?<!要)不要了?|(?<!是)不是|不(?:考虑了?|想要了?|需要了?|喜欢|感兴趣|用了|看了|习惯|合脚|合适|好用)|用不[上着到]"
    r"|[穿用玩看]?腻了|就?算了|免了|pass|(?:太|有点|有些)贵了?"
    r"|别(?:再|给我)?推荐?了?|别给我看"
    r"|(?:我|自己|家里)(?:都|也|已经)*有了?|已经有了?|(?:都|也)?不缺了?|(?:已经)?买过了|已经买了|(?:已经)?[穿用]着了?|在用|[我家]?(?:用|穿)过了?|一大堆|有的是|多的是")
# words asking for the rest once something is ruled out: 其他的还有什么, 换个牌子的, 别的, 剩下的, 另外两样
THE_REST = re.compile(r"其他|其它|其余|别的|另外|剩下|剩余|换个|换一?[个款双种]|看看别|还(?:有|卖|能买)(?:些|点)?(?:啥|什么|哪些|没有|吗|么|的)")
# where what a marker rules out ends: the clause's end, or what the customer asks for instead
_REGION_END = re.compile(r"还|其他|其它|别的|换|要|[，,。？?！!；;~～\s]")
_CLAUSE = re.compile(r"[^，,。？?！!；;~～\s]+")
# what stands around a kind written alone (那双鞋子的, 这款, 各种包): no goods
_AROUND_KIND = re.compile(r"[那这][双个款只件套把支些]|各[种类样]|所有|一些|[的我就也都先了呢吧啊呀那这]")


@dataclass(frozen=True)
class RuledOut:
    """What a message rules out: product ids (with every product of a kind ruled out), brands (as the catalog writes
    them), kinds (a word names end with)."""

    products: frozenset[str] = frozenset()
    brands: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    # brands written to say which product is ruled out (阿迪那个健身包不要): not ruled out, and no filter either
    naming: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.products or self.brands or self.kinds)

    def excludes(self, product_id: str, brand: str | None) -> bool:
        """Whether a product is ruled out: by itself or its kind (its id is in `products`), or by its brand."""
        return product_id in self.products or brand in self.brands


def ruled_out(text: str, spans: Iterable[tuple[int, int, str]], brands: Iterable[str],
              of_kind: Callable[[str], frozenset[str]]) -> RuledOut:
    """What the folded `text` rules out; `spans`: the catalog names found in it (start, end, product id);
    `brands`: the catalog's brands; `of_kind(word)`: the products whose names end with the word (none: no kind)."""
    spans, brands = list(spans), [b for b in brands if b]
    products: set[str] = set()
    found_brands: set[str] = set()
    kinds: set[str] = set()
    naming: set[str] = set()
    for clause in _CLAUSE.finditer(text):
        start = clause.start()
        for marker in _MARKER.finditer(clause.group()):
            at, end = clause.start() + marker.start(), clause.start() + marker.end()
            stop = _REGION_END.search(text, end, clause.end())
            for region in ((end, stop.start() if stop else clause.end()), (start, at)):
                named = _named_in(text, region, spans, brands, lambda word: bool(of_kind(word)))
                if any(named):
                    products |= named[0]
                    found_brands |= named[1]
                    kinds |= named[2]
                    if named[0]:
                        naming |= {b for b in brands if b.lower() in text[region[0]:region[1]]}
                    break
            start = end
    products |= {pid for kind in kinds for pid in of_kind(kind)}   # 鞋子不要: every shoe
    return RuledOut(frozenset(products), frozenset(found_brands), frozenset(kinds), frozenset(naming))


def _named_in(text: str, region: tuple[int, int], spans: list[tuple[int, int, str]], brands: list[str],
              is_kind: Callable[[str], bool]) -> tuple[set[str], set[str], set[str]]:
    """The products, brands and (when neither) the kind of goods written within `region` of `text`."""
    lo, hi = region
    piece = text[lo:hi]
    products = {pid for s, e, pid in spans if lo <= s and e <= hi}
    if products:   # 阿迪那个健身包不要: the brand says which product, the brand's other goods stay
        return products, set(), set()
    found = {b for b in brands if b.lower() in piece}
    if found:
        return set(), found, set()
    rest = _AROUND_KIND.sub("", piece)
    stem = rest[:-1] if len(rest) >= 2 and rest.endswith("子") else rest   # 鞋子 → 鞋
    if not stem or len(stem) > 4 or not all("\u4e00" <= ch <= "\u9fff" for ch in stem):
        return set(), set(), set()
    # 衣服 ends no name; its head 服 ends 瑜伽服: a kind by its whole stem, else a word of two by its last character
    kind = next((k for k in dict.fromkeys((stem, stem[-1] if len(stem) == 2 else stem)) if is_kind(k)), None)
    return set(), set(), {kind} if kind else set()


def marker_at(text: str, at: int) -> bool:
    """Whether a marker of ruling out starts at `at` (两百以上的就|算了, 五十以下的|不要)."""
    return _MARKER.match(text, at) is not None


def is_marker(word: str) -> bool:
    """Whether a word is only a marker of ruling out (pass, 算了): no goods."""
    return bool(_MARKER.fullmatch(word))
