"""Query-term → catalog-term synonyms learned from the catalog and the embedder, not a hand list: each head
noun of the catalog (the thing a product is: 跑步鞋, 帐篷) gets a vector from the name vectors of the
products that share it (its context in this catalog), and a word of a query that the catalog never uses
(运动鞋, 背囊, tent) is matched to those head nouns by meaning. The learned ranker and gate read the match
as features (retrieval/ranker.py), so how much a synonym counts is fitted on the train split."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from pypinyin import lazy_pinyin

from retrieval.documents import RetrievalDoc
from retrieval.text import STOPWORDS, Tokenizer, compact, fold
from retrieval.touched import AllProducts, Products

_HAN = re.compile(r"^[\u4e00-\u9fff]+$")
_WORDS = re.compile(r"[a-z][a-z\-]+")
_LATIN_RUN = re.compile(r"[a-z]")
_LATIN = re.compile(r"^[a-z][a-z\-]+$")
# numerals, units and sizes say how many or how big, not what (3x3, 230g, 1000)
_MEASURE = re.compile(r"^[\d.x×\-+]+[a-z]*$|^[a-z]{0,2}\d")
MIN_Z = 0.0   # below the catalog's average match a synonym says nothing
HEAD_SAMPLE = 64   # products read per head noun for its vector
MAX_LETTERS = 40   # a pinyin query longer than this is not a product name typed without its characters


def head_noun(doc: RetrievalDoc, tokenizer: Tokenizer) -> str:
    """The thing a product is: the last word of two or more Chinese characters of its name that is not
    its brand ('…双人四季帐篷' → '帐篷')."""
    brand = compact(doc.brand)
    words = [w for w in tokenizer.words(doc.base_name) if len(w) >= 2 and _HAN.match(w) and w != brand]
    return words[-1] if words else ""


def unknown_words(words: Sequence[str], vocabulary: set[str] | frozenset[str], query: str = "") -> list[str]:
    """The query's content words the catalog never uses: the ones a synonym may explain (a Latin word is
    read from the query as written, since its spaces separate them)."""
    out = []
    latin = _WORDS.findall(fold(query)) if query else []
    for word in [*(w for w in words if not _LATIN_RUN.search(w)), *latin]:
        if word in STOPWORDS or word in vocabulary or _MEASURE.match(word):
            continue
        if (_HAN.match(word) and len(word) >= 2) or (_LATIN.match(word) and len(word) >= 3):
            out.append(word)
    return list(dict.fromkeys(out))


@dataclass
class SynonymMatch:
    """One query's synonym signals: per product, and the best match of its last unknown word."""

    word: np.ndarray     # per product: the best z of any unknown query word against the product's head noun
    morpheme: np.ndarray  # per product: 1 when its head noun ends as an unknown query word does (运动鞋 ~ 跑步鞋)
    breadth: float       # how many of the catalog's head nouns end so (a hypernym names many: 鞋 → 6)
    query: np.ndarray    # per product: the whole query's z against the product's head noun
    last: float          # the z of the query's last unknown word at its best head noun (0 when none)
    table: dict[str, tuple[str, float]]   # unknown word → (the catalog term it maps to, z)


class SynonymTable:
    """The catalog's head nouns with a vector each (the normalized mean of their products' name vectors),
    and which head noun each product has."""

    def __init__(self, heads: Sequence[str], name_rows: Callable[[list[int]], np.ndarray], dimensions: int,
                 present: np.ndarray):
        """`heads`: each product's head noun (head_noun), in the search's product order."""
        members: dict[str, list[int]] = defaultdict(list)
        for i, head in enumerate(heads):
            if head and present[i]:
                members[head].append(i)
        self.heads = sorted(members)
        self.head_of = np.full(len(heads), -1, dtype=np.int64)
        vectors = np.zeros((len(self.heads), dimensions), dtype=np.float32)
        for k, head in enumerate(self.heads):
            self.head_of[members[head]] = k
            # a head noun's vector: the mean of (at most HEAD_SAMPLE of) its products' name vectors, so a large
            # catalog's memory-mapped vectors are read for a sample, not all of them
            mean = np.asarray(name_rows(members[head][:HEAD_SAMPLE]), dtype=np.float32).mean(axis=0)
            vectors[k] = mean / max(float(np.linalg.norm(mean)), 1e-9)
        self.vectors = vectors
        self._endings = np.array([h[-1] for h in self.heads])

    def __len__(self) -> int:
        return len(self.heads)

    def z(self, vector: np.ndarray) -> np.ndarray:
        """z-scores of a vector's closeness to every head noun, against the catalog's head nouns."""
        sims = self.vectors @ vector
        return (sims - sims.mean()) / (sims.std() + 1e-6)

    def _per_product(self, z: np.ndarray, head_of: np.ndarray) -> np.ndarray:
        out = np.where(head_of >= 0, z[np.maximum(head_of, 0)], 0.0)
        return np.maximum(out, MIN_Z).astype(np.float32)

    def match(self, query_vector: np.ndarray, word_vectors: Mapping[str, np.ndarray],
              rows: np.ndarray | None = None) -> SynonymMatch:
        """The query's synonym signals, per product (or per product of `rows`, a large catalog's candidates)."""
        head_of = self.head_of if rows is None else self.head_of[rows]
        n = len(head_of)
        if len(self.heads) < 3:
            zero = np.zeros(n, np.float32)
            return SynonymMatch(zero, zero, 0.0, zero, 0.0, {})
        word = np.zeros(n, dtype=np.float32)
        morpheme = np.zeros(len(self.heads), dtype=bool)
        table, last = {}, 0.0
        for w, vector in word_vectors.items():
            if _HAN.match(w):
                morpheme |= self._endings == w[-1]
            z = self.z(vector)
            best = int(np.argmax(z))
            table[w] = (self.heads[best], float(z[best]))
            word = np.maximum(word, self._per_product(z, head_of))
            last = float(z[best])   # dicts keep the query's order: the last one wins
        per_product = np.where(head_of >= 0, morpheme[np.maximum(head_of, 0)], False).astype(np.float32)
        return SynonymMatch(word, per_product, float(np.log1p(morpheme.sum())),
                            self._per_product(self.z(query_vector), head_of), last, table)


class PinyinNames:
    """A query typed in pinyin without its characters (paobuxie, yaling, shuangren zhangpeng): each run of its
    letters cut into pinyin syllables every way it can be, and every stretch of two or more syllables looked up
    among the catalog's name pieces by sound (`spelling`, LexicalIndex: whole names, the words of names, other
    names). Per product, the share of the letters its pieces spell — a whole name or another name counts 1.0,
    a word of a name 0.6 (`products` gives each piece's products and weight) — summed over stretches that do
    not overlap. Dict lookups only, never a pass over the catalog."""

    def __init__(self, size: int, spelling: Mapping[str, str],
                 products: Callable[[str], tuple[np.ndarray, np.ndarray] | None]):
        self.size = size
        self._spelling = spelling
        self._products = products
        # a query is cut once: its reading for the embedder, its spelling and its scores all ask
        self._found = lru_cache(maxsize=1024)(self._cut)

    def _cut(self, query: str) -> tuple[tuple[tuple[int, int, str], ...], int]:
        """(start, end, piece) for every name piece the letters spell, and how many letters there are."""
        runs = [w.replace("-", "") for w in _WORDS.findall(fold(query))]
        letters = sum(map(len, runs))
        if letters < 4 or letters > MAX_LETTERS:
            return (), letters
        found, offset, budget = [], 0, MAX_SPLITS
        for run in runs:
            for start in range(len(run)):
                stack: list[tuple[int, tuple[str, ...]]] = [(start, ())]
                while stack and budget > 0:   # (an ambiguous run — ananan… — has exponentially many cuts)
                    at, syllables = stack.pop()
                    budget -= 1
                    if len(syllables) >= 2 and (piece := self._spelling.get(" ".join(syllables))):
                        found.append((offset + start, offset + at, piece))
                    for n in range(1, min(_LONGEST_SYLLABLE, len(run) - at) + 1):
                        if run[at:at + n] in pinyin_syllables():
                            stack.append((at + n, (*syllables, run[at:at + n])))
            offset += len(run)
        return tuple(found), letters

    @staticmethod
    def _stretches(found: Sequence[tuple[int, int, str]]) -> list[list[tuple[int, int, str]]]:
        """The spelled pieces grouped where their letters overlap (yumaoqiupai: 羽毛球拍, 羽毛球, 球拍 — one)."""
        groups: list[list[tuple[int, int, str]]] = []
        end = -1
        for hit in sorted(found):
            if hit[0] >= end:
                groups.append([])
            groups[-1].append(hit)
            end = max(end, hit[1])
        return groups

    def _best(self, group: list[tuple[int, int, str]]) -> tuple[int, int, str]:
        def rank(hit: tuple[int, int, str]) -> tuple[int, float]:
            products = self._products(hit[2])
            return hit[1] - hit[0], float(products[1].max()) / len(hit[2]) if products else 0.0
        return max(group, key=rank)

    def spelled(self, query: str) -> str:
        """The catalog's own characters for a query typed in pinyin ('paobuxie' → '跑步鞋', 'shuangren
        zhangpeng' → '双人 帐篷'): the longest piece of each stretch, when they cover at least half of the
        letters; else ''."""
        found, letters = self._found(query)
        best = [self._best(group) for group in self._stretches(found)]
        covered = sum(end - start for start, end, _ in best)
        return " ".join(piece for _, _, piece in best) if best and covered * 2 >= letters else ""

    def docs(self, query: str) -> list[np.ndarray]:
        """The products the pieces a query's letters spell name (those `match` scores above 0)."""
        found, _ = self._found(query)
        return [products[0] for _, _, piece in found if (products := self._products(piece)) is not None]

    def match(self, query: str, within: Products | None = None) -> np.ndarray:
        """Per product (per touched product, `within`, which holds `docs(query)`), the share of the query's
        letters that its name pieces spell."""
        over = within or AllProducts(self.size)
        out = np.zeros(over.size, dtype=np.float32)
        found, letters = self._found(query)
        for group in self._stretches(found):
            stretch = np.zeros(over.size, dtype=np.float32)
            for start, end, piece in group:
                products = self._products(piece)
                if products is not None:
                    docs, weights = products
                    np.maximum.at(stretch, over.slots(docs), weights / len(piece) * (end - start) / letters)
            out += stretch
        return np.minimum(out, 1.0)


_LONGEST_SYLLABLE = 6   # zhuang, shuang
MAX_SPLITS = 1024       # syllable cuts tried per query, at most


@lru_cache(maxsize=1)
def pinyin_syllables() -> frozenset[str]:
    """Every toneless pinyin syllable (as pypinyin writes them: lv for 绿), read off the CJK block once; the
    interjections without a vowel (嗯 n, 呣 m) left out: they would cut English words (women → wo m e n)."""
    return frozenset(p for cp in range(0x4E00, 0xA000) for p in lazy_pinyin(chr(cp), errors="ignore")
                     if p.isalpha() and any(v in p for v in "aeiouv"))


HYPERNYM_HEADS = 3   # a word whose head character ends this many of the catalog's head nouns names a family


class HeadFamilies:
    """The catalog's head nouns grouped by their last character, the kind of thing a Chinese compound
    names (鞋: 跑步鞋, 篮球鞋, 足球鞋…). A word the catalog never uses that ends in a character shared by
    HYPERNYM_HEADS or more head nouns (运动鞋, 球鞋) is a hypernym of a family the shop sells, not a thing it
    lacks; one shared by fewer (杠铃 ~ 壶铃, 篮球架 ~ 羽毛球网架) may well be a different thing. The
    threshold was chosen on the train split (no train absent query of either catalog reaches it). The rest
    of the word must be written with characters of the catalog's names (运动鞋: 运动袜), else it names another
    thing of the family's kind (保龄球 is a 球 the shop does not sell)."""

    def __init__(self, docs: Sequence[RetrievalDoc], heads: Sequence[str]):
        members: dict[str, set[str]] = defaultdict(set)
        positions: dict[str, list[int]] = defaultdict(list)
        for i, head in enumerate(heads):
            if head:
                members[head[-1]].add(head)
                positions[head[-1]].append(i)
        self._count = len(heads)
        self._size = {ending: len(heads) for ending, heads in members.items()}
        # the products whose head noun ends in each character: a family is marked by them, not found by comparing
        # every product's ending (a million strings per query)
        self._positions = {ending: np.array(at, dtype=np.int64) for ending, at in positions.items()}
        self._name_chars = {c for doc in docs for c in compact(doc.base_name)}

    def family(self, words: Sequence[str], vocabulary: set[str] | frozenset[str]) -> np.ndarray:
        """Per product, True when the query's last content word is unknown to the catalog and names the
        product's family; all False otherwise."""
        out = np.zeros(self._count, dtype=bool)
        if not words or words[-1] in vocabulary or not _HAN.match(words[-1]) or len(words[-1]) < 2:
            return out
        ending = words[-1][-1]
        if self._size.get(ending, 0) >= HYPERNYM_HEADS and set(words[-1][:-1]) <= self._name_chars:
            out[self._positions[ending]] = True
        return out


def in_order(short: str, long: str) -> bool:
    """双肩包 ~ 双肩运动背包, 跑鞋 ~ 跑步鞋: every character of the short form, in order, in the long one."""
    rest = iter(long)
    return len(short) >= 2 and all(ch in rest for ch in short)


class ShortForms:
    """A customer's short form of a product name (跑鞋 for 跑步鞋, 羽拍 for 羽毛球拍): a query word of two or
    more Chinese characters that the name holds in order but not as one piece. Only the names holding every
    character of the word are checked (an index by character), so a query does not walk the catalog."""

    def __init__(self, docs: Sequence[RetrievalDoc]):
        self._names = [compact(d.base_name) for d in docs]
        holders: dict[str, set[int]] = defaultdict(set)
        for i, name in enumerate(self._names):
            for ch in name:
                holders[ch].add(i)
        self._holders = holders

    def match(self, words: Sequence[str], rows: Sequence[int] | None = None) -> np.ndarray:
        """Per product (or per product of `rows`, a large catalog's candidates: a word of common characters
        is held by tens of thousands of names there), the share of its name the short form spells."""
        out = np.zeros(len(self._names) if rows is None else len(rows), dtype=np.float32)
        for word in {w for w in words if _HAN.match(w) and 2 <= len(w) <= 6}:
            for k, i in self._holding(word) if rows is None else enumerate(rows):
                name = self._names[i]
                if word not in name and in_order(word, name):
                    out[k] = max(out[k], len(word) / len(name))
        return out

    def _holding(self, word: str) -> list[tuple[int, int]]:
        """(position in the output, product) for the products whose names hold every character of `word`."""
        sets = sorted((self._holders.get(ch, set()) for ch in set(word)), key=len)
        return [(i, i) for i in set.intersection(*sets)] if sets and sets[0] else []
