"""A message typed in toneless pinyin, read as the Chinese it spells: yu mao qiu pai duo shao qian → 羽毛球拍多少钱,
paiqiu you huo ma → 排球有货吗, and pinyin inside a word, anchored by the characters around it: hou度 → 厚度,
lun滑鞋 → 轮滑鞋.

The words it can spell are the shop's own (names, short forms, brands, categories), the reader's word families
(`agent.mentions`) and the words of the customers' messages the router is trained on (`routing-train.jsonl`,
the train split only), each weighted by how often customers write it. A Latin run is read as pinyin only when
every letter of it falls into syllables and every syllable into one of those words — the likeliest sequence of
words, by their counts — so an English word (yoga mat, price), a size (XL码) or a material (PU皮) stays as it is."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pypinyin import lazy_pinyin

from agent import mentions
from retrieval.glosses import gloss
from retrieval.text import is_han, plain_words

_CORPUS = Path(__file__).parent / "evalsets" / "routing-train.jsonl"
_LATIN_RUN = re.compile(r"[a-z]+(?:[ '’]+[a-z]+)*", re.IGNORECASE)
_TOKEN_BREAK = re.compile(r"[ '’]+")
MAX_WORD_SYLLABLES = 6
MAX_SEGMENTATIONS = 16   # a token's readings as syllables (xian: xian, xi an) — a few at most in practice


@lru_cache(maxsize=1)
def syllables() -> frozenset[str]:
    """Every toneless pinyin syllable with a vowel (ü as v: lv, nv), read from pypinyin's own dictionary."""
    readings = lazy_pinyin("".join(map(chr, range(0x4E00, 0x9FA6))), errors="ignore")
    return frozenset(s for s in readings if s.isascii() and s.isalpha() and re.search("[aeiouv]", s))


def segmentations(token: str) -> list[tuple[str, ...]]:
    """The ways `token` (lower case letters) falls into syllables, fewest syllables first; [] when it does not."""
    known, longest = syllables(), 6
    ways: list[list[tuple[str, ...]]] = [[] for _ in range(len(token) + 1)]
    ways[0] = [()]
    for i in range(len(token)):
        if not ways[i]:
            continue
        for j in range(i + 1, min(len(token), i + longest) + 1):
            if token[i:j] in known:
                ways[j].extend(way + (token[i:j],) for way in ways[i][:MAX_SEGMENTATIONS])
    return sorted(ways[len(token)], key=len)[:MAX_SEGMENTATIONS]


@lru_cache(maxsize=1)
def _customer_counts() -> Counter[str]:
    """How often each word is written in the customers' messages the router is trained on (train split), and each
    run of two or three words written together at least twice (怎么卖 beside 怎么买: which of two homophones)."""
    counts: Counter[str] = Counter()
    phrases: Counter[str] = Counter()
    with _CORPUS.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row.get("split", "train") == "train":
                words = plain_words(row["text"])
                counts.update(w for w in words if all(map(is_han, w)))
                for n in (2, 3):
                    phrases.update(p for i in range(len(words) - n + 1)
                                   if all(map(is_han, p := "".join(words[i:i + n]))))
    counts.update({p: c for p, c in phrases.items() if c >= 2 and p not in counts})
    return counts


@dataclass(frozen=True)
class Lexicon:
    """Chinese words by their toneless syllables, each with its log weight."""

    words: dict[tuple[str, ...], tuple[str, float]]            # syllables → the likeliest word spelled so
    within: dict[tuple[str, ...], tuple[tuple[str, int, float], ...]]   # syllables → (word, where they start, weight)

    @classmethod
    def of(cls, shop_words: set[str] | frozenset[str]) -> Lexicon:
        counts = Counter(_customer_counts())
        for word in {*shop_words, *mentions.SHOP_TALK}:
            if word and all(map(is_han, word)):
                counts[word] += 1
        total = sum(counts.values())
        words: dict[tuple[str, ...], tuple[str, float]] = {}
        within: dict[tuple[str, ...], list[tuple[str, int, float]]] = {}
        for word, count in counts.items():
            spelled = tuple(lazy_pinyin(word))
            if len(spelled) != len(word) or len(spelled) > MAX_WORD_SYLLABLES:
                continue
            weight = math.log(count / total)
            if spelled not in words or words[spelled][1] < weight:
                words[spelled] = (word, weight)
            for start in range(len(spelled)):
                for end in range(start + 1, len(spelled) + 1):
                    within.setdefault(spelled[start:end], []).append((word, start, weight))
        return cls(words, {k: tuple(v) for k, v in within.items()})

    def sentence(self, tokens: list[str]) -> tuple[str, int] | None:
        """(the Chinese `tokens` spell as the likeliest words, its syllable count), or None when some letters
        are no syllable or some syllables no word. A word may run across the customer's spaces; a syllable not."""
        cells = [segmentations(token) for token in tokens]
        if not all(cells):
            return None
        for reading in _readings(cells):   # the fewest syllables first; the first that words cover

            found = self._cover(reading)
            if found is not None:
                return "".join(found), len(reading)
        return None

    def _cover(self, reading: tuple[str, ...]) -> list[str] | None:
        """The likeliest words that spell `reading` (syllables) exactly, or None."""
        best: list[tuple[float, list[str]] | None] = [None] * (len(reading) + 1)
        best[0] = (0.0, [])
        for i in range(len(reading)):
            if best[i] is None:
                continue
            score, words = best[i]   # type: ignore[misc]
            for j in range(i + 1, min(len(reading), i + MAX_WORD_SYLLABLES) + 1):
                hit = self.words.get(reading[i:j])
                if hit is not None and (best[j] is None or best[j][0] < score + hit[1]):   # type: ignore[index]
                    best[j] = (score + hit[1], [*words, hit[0]])
        last = best[len(reading)]
        return last[1] if last is not None else None

    def anchored(self, token: str, before: str, after: str) -> tuple[str, int, int] | None:
        """Pinyin typed inside a word (hou度, 乒乓qiu拍): (the characters the token stands for, how many of the
        characters `before` it and `after` it the word takes), the word that takes the most of them, else the
        likeliest; None when no word written so holds them."""
        best: tuple[int, float, str, int, int] | None = None
        for way in segmentations(token):
            for word, start, weight in self.within.get(way, ()):
                left, right = word[:start], word[start + len(way):]
                if (left or right) and before.endswith(left) and after.startswith(right):
                    key = (len(left) + len(right), weight, word[start:start + len(way)], len(left), len(right))
                    if best is None or key[:2] > best[:2]:
                        best = key
        return (best[2], best[3], best[4]) if best is not None else None


def _readings(cells: list[list[tuple[str, ...]]]) -> list[tuple[str, ...]]:
    """The tokens' syllable readings joined, the fewest syllables first, at most MAX_SEGMENTATIONS of them."""
    joined: list[tuple[str, ...]] = [()]
    for ways in cells:
        joined = sorted((j + w for j in joined for w in ways), key=len)[:MAX_SEGMENTATIONS]
    return joined


def _english(token: str) -> bool:
    return token in mentions.ENGLISH_WORDS or bool(gloss(token))


def may_be_pinyin(text: str) -> bool:
    """Whether `text` holds a Latin token of two or more letters that falls into pinyin syllables (cheap: no
    lexicon needed), so the lexicon is built only for a message that may need it."""
    return any(len(t) >= 2 and segmentations(t.lower()) for run in _LATIN_RUN.findall(text)
               for t in _TOKEN_BREAK.split(run))


def spelled_out(text: str, lexicon: Lexicon) -> str:
    """`text` with each stretch typed in pinyin written in the Chinese it spells; anything else as it was."""
    pieces: list[str] = []
    last = 0
    for run in _LATIN_RUN.finditer(text):
        pieces.append(text[last:run.start()])
        pieces.append(_run_spelled(text, run, lexicon))
        last = run.end()
    pieces.append(text[last:])
    return "".join(pieces)


def _han_before(text: str, at: int) -> str:
    start = at
    while start > 0 and is_han(text[start - 1]):
        start -= 1
    return text[start:at]


def _han_after(text: str, at: int) -> str:
    end = at
    while end < len(text) and is_han(text[end]):
        end += 1
    return text[at:end]


def _run_spelled(text: str, run: re.Match[str], lexicon: Lexicon) -> str:
    """One Latin run: its tokens that fall into syllables, in stretches between those that do not, read as pinyin
    when it spells two syllables or more and is no English word alone or in a pair (yoga; long men) — or one token
    inside a word."""
    raw = run.group()
    parts = [(m.start(), m.end()) for m in re.finditer(r"[a-z]+", raw, re.IGNORECASE)]
    out, at = [], 0
    stretch: list[tuple[int, int]] = []

    def flush() -> None:
        nonlocal at
        if not stretch:
            return
        start, end = stretch[0][0], stretch[-1][1]
        tokens = [raw[a:b].lower() for a, b in stretch]
        before = _han_before(text, run.start()) if start == 0 else ""
        after = _han_after(text, run.end()) if end == len(raw) else ""
        spelled = None
        if len(tokens) == 1 and len(tokens[0]) >= 2 and (before or after):
            anchored = lexicon.anchored(tokens[0], before, after)
            spelled = anchored[0] if anchored else None
        if spelled is None and (len(tokens) >= 3 or sum(map(_english, tokens)) < len(tokens)):
            sentence = lexicon.sentence(tokens)
            spelled = sentence[0] if sentence and sentence[1] >= 2 else None
        if spelled is not None:
            out.append(raw[at:start])
            out.append(spelled)
            at = end
        stretch.clear()

    for a, b in parts:
        if segmentations(raw[a:b].lower()):
            stretch.append((a, b))
        else:
            flush()
    flush()
    out.append(raw[at:])
    return "".join(out)
