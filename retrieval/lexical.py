"""The lexical signal: BM25 over jieba words, plus exact product-name and brand matches that also
survive traditional characters and homophone input-method typos (matched on pinyin)."""

from __future__ import annotations

import re
from array import array
from collections import ChainMap, Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from pypinyin import lazy_pinyin

from retrieval.documents import RetrievalDoc
from retrieval.shapes import ShapeNeighbours
from retrieval.synonyms import head_noun
from retrieval.text import (
    NOUN_SUFFIXES,
    STOPWORDS,
    Tokenizer,
    compact,
    fold,
    known_word,
    pinyin_of,
    plain_words,
)
from retrieval.thesaurus import kinship
from retrieval.touched import AllProducts, Products, Touched, touch

K1, B = 1.2, 0.75
NAME_WEIGHT, BRAND_WEIGHT = 3, 2
PART_NAME_SCORE = 0.6   # a word of a name ('泳镜' in '防雾泳镜') counts less than the whole name
PINYIN_SCORE = 0.9      # a homophone of a name piece (兰球 for 篮球) counts a little less than the piece
PAIR_SCORE = 0.3        # two characters of a name (山鞋 of 登山鞋 in 爬山鞋): a weak anchor
MAX_QUERY_CHARS = 64
# a large catalog may choose its lexical candidates from each word's (name piece's, brand's) best this many
# products by weight instead of every product that holds it (a common word is held by a tenth of a million
# products); the candidates' own values are then read exactly (LexicalIndex.at_rows). Off (None) by default:
# bench/retrieval_scale.py --postings-read 4096 at 1M took p50 12.5 -> 7.0 ms but agreed with ranking every product
# on the top 5's scores for 0.72 of the queries instead of 0.85 (bench/README.md, 2026-12-06)
POSTINGS_READ: int | None = None
MAX_SHAPE_PIECE = 6     # the longest name piece a shape-alike typo is read inside
SHAPE_MAX_WORDS = 3     # …in a query of fewer content words (a short noun phrase, as the gate's `short`)


@dataclass(frozen=True)
class QueryText:
    """A query folded (NFKC, simplified, lower case, no punctuation) and tokenized, once."""

    folded: str
    tokens: list[str]   # search-mode words, for BM25
    words: list[str]    # precise-mode words, for word-order checks and counting content words


def _spans(text: str, min_len: int = 2, max_len: int = MAX_QUERY_CHARS) -> list[tuple[int, int]]:
    """(start, end) of every piece of `text` from `min_len` to `max_len` characters long."""
    n = min(len(text), MAX_QUERY_CHARS)
    return [(i, j) for i in range(n) for j in range(i + min_len, min(n, i + max_len) + 1)]


_Found = tuple[np.ndarray, np.ndarray] | None   # a name piece's products and their weights, if it is one


class _Pieces:
    """Name pieces → (products, weights), each product once at its best weight, held in two flat arrays with one slot
    number per piece: a catalog's whole names are a million pieces of one product each, and two small numpy
    arrays per piece cost ~400 bytes where a slot costs ~30."""

    def __init__(self, hits: dict[str, list[tuple[int, float]]]):
        self._slot: dict[str, int] = {}
        docs, weights, bounds = [], [], [0]
        for piece, found in hits.items():
            best: dict[int, float] = {}
            for doc, weight in found:
                best[doc] = max(best.get(doc, 0.0), weight)
            self._slot[piece] = len(bounds) - 1
            docs.extend(best)
            weights.extend(best.values())
            bounds.append(len(docs))
        self._docs = np.array(docs, dtype=np.int64)
        self._weights = np.array(weights, dtype=np.float32)
        self._bounds = np.array(bounds, dtype=np.int64)

    def __contains__(self, piece: str) -> bool:
        return piece in self._slot

    def get(self, piece: str) -> _Found:
        slot = self._slot.get(piece)
        if slot is None:
            return None
        start, end = self._bounds[slot], self._bounds[slot + 1]
        return self._docs[start:end], self._weights[start:end]


def _member(docs: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Which of `rows` are in `docs` (ascending product positions), by binary search."""
    return _lookup(docs, rows)[1]


def _lookup(docs: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where each of `rows` is or would be in `docs`, whether it is there): both ascending product positions."""
    if not len(docs):
        return np.zeros(len(rows), dtype=np.int64), np.zeros(len(rows), dtype=bool)
    at = np.minimum(np.searchsorted(docs, rows), len(docs) - 1)
    return at, docs[at] == rows


MAX_LOOSE = 4   # the longest piece of a name's loose characters read by sound


def _loose_pieces(whole: str, tokens: Sequence[str]) -> Iterator[str]:
    """Pieces of a name no word of it is: the stretches of two to MAX_LOOSE Chinese characters that jieba cut
    into single characters (女款溯溪鞋 → 溯溪, 溪鞋, 溯溪鞋: single-character tokens one after another), and the
    endings of its longer words, where a compound names the thing (升钓箱 of 25升钓箱 → 钓箱)."""
    run = ""
    for token in (*tokens, ""):
        if len(token) == 1 and _is_han(token):
            run += token
            continue
        for i in range(len(run) - 1):
            yield from (run[i:j] for j in range(i + 2, min(len(run), i + MAX_LOOSE) + 1))
        run = ""
        if 3 <= len(token) < len(whole) and _is_han(token):   # (the whole name is a word of jieba's too)
            yield from (token[k:] for k in range(max(1, len(token) - MAX_LOOSE), len(token) - 1))


# how many people a thing is for: 1人, 单人, 双人, 两人, 四人, 10人 (not 3-4人's range, not 个人 or 成人)
_HEADCOUNT = re.compile(r"(?<![\d\-~～至到])(?:\d{1,2}|[单双两一二三四五六七八九十])人")
_WORD_NUMBERS = {"单": 1, "双": 2, "两": 2, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
                 "九": 9, "十": 10}


def _people(form: str) -> int:
    """The number of people of a head-count form: 单人 → 1, 4人 → 4."""
    number = form[:-1]
    return int(number) if number.isdigit() else _WORD_NUMBERS[number]


def _raise(scores: np.ndarray, docs: np.ndarray, weights: np.ndarray | float) -> None:
    scores[docs] = np.maximum(scores[docs], weights)


# numerals and measure words say how many, not what: 羽毛球拍买两支 asks for 羽毛球拍
_COUNTING = frozenset("一二两三四五六七八九十百千万几多个支只双件条套副把盒罐瓶包块元")


def _syllables(folded: str) -> list[str]:
    """One pinyin syllable (or the character itself) per character."""
    syllables = lazy_pinyin(folded, errors=lambda run: list(run))
    return syllables if len(syllables) == len(folded) else [pinyin_of(c) or c for c in folded]


def _is_han(text: str) -> bool:
    return all("\u4e00" <= c <= "\u9fff" for c in text)


def _lacks(letters: frozenset[str], c: str) -> bool:
    """Whether a product whose characters and name syllables are `letters` lacks `c`, even as a homophone."""
    return c not in letters and pinyin_of(c) not in letters


class _PostingsBuilder:
    """BM25 postings built from each product's bag of words as it is read (token ids and term frequencies in
    flat arrays, the weights computed at the end in one vectorized pass), not from a list of a million bags."""

    def __init__(self):
        self.vocabulary: dict[str, int] = {}
        self._tokens, self._tf, self._entries = array("q"), array("q"), array("q")

    def add(self, bag: Counter[str]) -> None:
        ids = self.vocabulary
        for token, tf in bag.items():
            self._tokens.append(ids.setdefault(token, len(ids)))
            self._tf.append(tf)
        self._entries.append(len(bag))

    def build(self, size: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        if not size:
            return {}
        tokens = np.frombuffer(self._tokens, dtype=np.int64) if self._tokens else np.zeros(0, np.int64)
        tf = np.frombuffer(self._tf, dtype=np.int64) if self._tf else np.zeros(0, np.int64)
        entries = np.frombuffer(self._entries, dtype=np.int64)
        doc = np.repeat(np.arange(size), entries)
        lengths = np.bincount(doc, weights=tf, minlength=size).astype(np.float32)
        avg = float(lengths.mean()) or 1.0
        df = np.bincount(tokens, minlength=len(self.vocabulary))
        # the same arithmetic (and the same float32 rounding) as the per-entry loop it replaces
        idf = np.log(1 + (size - df + 0.5) / (df + 0.5))
        norm = K1 * (1 - B + B * lengths / avg)
        weights = (idf[tokens] * tf * (K1 + 1)).astype(np.float32) / (tf.astype(np.float32) + norm[doc])
        order = np.argsort(tokens, kind="stable")   # each token's products in ascending order
        bounds = np.cumsum(np.bincount(tokens, minlength=len(self.vocabulary)))
        docs, weights = doc[order], weights[order]
        out, start = {}, 0
        for token, end in zip(self.vocabulary, bounds.tolist(), strict=True):
            out[token] = (docs[start:end], weights[start:end])
            start = end
        return out


class LexicalIndex:
    """Scores every product against a query in a few vectorized steps."""

    def __init__(self, docs: Sequence[RetrievalDoc]):
        self.size = len(docs)
        self._docs = docs   # read again for one product's characters (unexplained), never kept per product
        self.tokenizer = Tokenizer([d.base_name for d in docs] + [d.brand for d in docs])
        names: dict[str, list[tuple[int, float]]] = defaultdict(list)
        sounds: dict[str, list[tuple[int, float]]] = defaultdict(list)
        pairs: dict[str, set[int]] = defaultdict(set)
        sound_of: dict[str, str] = {}   # each Chinese name piece's pinyin
        loose: set[str] = set()     # pieces of names no word of them is (溯溪鞋 of 女款溯溪鞋: _loose_pieces)
        counts: set[str] = set()    # how the names write how many people a thing is for (1人, 单人, 四人)
        self._brands: dict[str, list[int]] = defaultdict(list)
        heads: dict[str, list[int]] = defaultdict(list)
        kinds: dict[str, list[int]] = defaultdict(list)

        tokens_of = lru_cache(maxsize=1 << 16)(self.tokenizer.tokens)   # brands, categories, aliases repeat
        self._sentence_tokens = lru_cache(maxsize=65536)(self.tokenizer.folded_tokens)
        self._letters = lru_cache(maxsize=4096)(self._letters_of)
        self._best_of = lru_cache(maxsize=2048)(self._best_uncached)
        self.head_of: list[str] = []   # each product's head noun (synonyms.head_noun), one string per noun
        interned: dict[str, str] = {}
        postings = _PostingsBuilder()
        for i, doc in enumerate(docs):
            name_tokens = self.tokenizer.tokens(doc.base_name)
            bag = Counter(self._text_tokens(doc.text))
            for token in name_tokens:
                bag[token] += NAME_WEIGHT
            for token in tokens_of(doc.brand):
                bag[token] += BRAND_WEIGHT
            # product-side expansion: what kind of thing it is and its other names are words it is found by
            for token in tokens_of(doc.category) + [t for a in doc.aliases for t in tokens_of(a)]:
                bag[token] += 1
            postings.add(bag)
            self._index_name(i, doc, name_tokens, names, sounds, pairs, sound_of, loose, counts)
            head = interned.setdefault(head, head) if (head := head_noun(doc, self.tokenizer)) else ""
            self.head_of.append(head)
            if head:
                heads[head].append(i)
            for token in {t for t in tokens_of(doc.category) if len(t) >= 2}:
                kinds[token].append(i)
        self.vocabulary: set[str] = set(postings.vocabulary)
        self._postings = postings.build(self.size)
        self._names = _Pieces(names)
        self._sounds = _Pieces(sounds)
        # how the catalog writes each name piece it knows by sound (the longest piece first wins a span)
        spellings: dict[str, list[str]] = defaultdict(list)
        for k in sorted(names, key=len):
            if _is_han(k) and len(k) >= 2:
                spellings[sound_of[k]].append(k)
        self._spelling = {sound: written[-1] for sound, written in spellings.items()}
        # the sounds the catalog writes in more than one way (水袋 and 睡袋 are both shui dai): respell chooses
        self._homophones = {sound: tuple(written) for sound, written in spellings.items() if len(written) > 1}
        del spellings
        # the pieces of names no word of them is, by sound, for a query typed in pinyin (suxixie, taibei 钛杯)
        self._loose_spelling = {sound: k for k in sorted(loose, key=len) if (sound := pinyin_of(k)) not in self._spelling}
        # each number of people → how the names write it (1 → 1人, 单人)
        self._counts: dict[int, list[str]] = defaultdict(list)
        for form in sorted(counts):
            self._counts[_people(form)].append(form)
        # the characters a name piece uses: a query character outside them may be a shape-alike typo of one
        # (every Chinese character of a name: a name piece's, or one of a pair of adjacent ones — 绳 of 9.8毫米动力绳,
        # which jieba cuts to single characters, is a name's character too)
        self._name_chars = frozenset(c for k in (*sound_of, *pairs) for c in k)
        self._shapes = ShapeNeighbours(self._name_chars)
        del names, sounds, sound_of, loose, counts
        self._pairs = {k: np.fromiter(sorted(v), dtype=np.int64) for k, v in pairs.items()}   # ascending
        self._heads = {k: np.array(v) for k, v in heads.items()}
        # each product's head noun as a number (one per distinct head noun; -1: none), for choosing candidates of
        # several kinds (search._spread_top)
        self.head_ids = np.full(self.size, -1, dtype=np.int32)
        for k, at in enumerate(self._heads.values()):
            self.head_ids[at] = k
        # each head noun's pinyin → the head nouns spelled so: a query's syllable runs are looked up in it
        # (kind_match), not every head noun's pinyin searched in the query (tens of thousands in a large catalog)
        self._head_sounds: dict[str, list[str]] = defaultdict(list)
        for k in heads:
            if sound := pinyin_of(k):
                self._head_sounds[sound].append(k)
        self._head_syllables = max((s.count(" ") + 1 for s in self._head_sounds), default=0)
        self._head_ends = frozenset(k[-1] for k in heads)
        self._head_longest = max(map(len, heads), default=0)
        self._kinds = {k: np.array(v) for k, v in kinds.items()}
        self._brands = {k: np.array(v, dtype=np.int64) for k, v in self._brands.items()}
        self._clipped = self._clipped_brands()
        self._clipped_longest = max(map(len, self._clipped), default=0)

    def _clipped_brands(self) -> dict[str, str]:
        """A long Chinese brand's first characters as customers clip it (阿迪 for 阿迪达斯, 迪卡 for 迪卡侬, 尤尼
        for 尤尼克斯) → the brand: a prefix of two or more characters of a brand of three or more, that no other
        product's words hold (营地 of a brand 营地家 is a word of every camping product), that is no brand itself
        and clips one brand only."""
        clipped: dict[str, list[str]] = defaultdict(list)
        for brand, docs in self._brands.items():
            if len(brand) < 3 or not all(map(_is_han, brand)):
                continue
            own = set(docs.tolist())
            for prefix in (brand[:end] for end in range(2, len(brand))):
                held = self._postings.get(prefix)
                if prefix not in self._brands and (held is None or own.issuperset(held[0].tolist())):
                    clipped[prefix].append(brand)
        return {prefix: brands[0] for prefix, brands in clipped.items() if len(brands) == 1}

    def unclip(self, folded: str) -> str:
        """The query with each clipped brand written out (阿迪跑鞋 → 阿迪达斯跑鞋), so every signal reads the brand;
        only at the start of a word (壶中 clips 壶中天, and 水壶中 is 水壶 + 中)."""
        longest = self._clipped_longest
        if not any(folded[i:j] in self._clipped for i, j in _spans(folded, max_len=longest)):
            return folded   # no clipped brand in it: not cut into words a second time
        out, at = [], 0
        for word in self.tokenizer.words(folded):
            start = folded.find(word, at)
            if start < 0:
                continue
            for end in range(longest, 1, -1):
                brand = self._clipped.get(folded[start:start + end])
                if brand is not None and not folded.startswith(brand, start):
                    out += [folded[at:start], brand]
                    at = start + end
                    break
            else:
                out.append(folded[at:start + len(word)])
                at = start + len(word)
        return "".join(out) + folded[at:]

    @property
    def spelling(self) -> ChainMap[str, str]:
        """What a query typed in pinyin may spell, by toneless pinyin: each Chinese name piece the catalog knows (a
        whole name, a word of one, another name: 'tiao sheng' → 跳绳), then the pieces of names no word of them is
        ('tai bei' → 钛杯 of 300毫升单层钛杯)."""
        return ChainMap(self._spelling, self._loose_spelling)

    def name_piece(self, piece: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The products a name piece names, and its weight for each (1.0 or PART_NAME_SCORE × its length)."""
        return self._names.get(piece)

    def _text_tokens(self, text: str) -> list[str]:
        """`Tokenizer.tokens` of a product's document, one sentence at a time: jieba cuts at every 。 anyway, so
        the words are the same, and a sentence many products share (a description, a usage) is cut once."""
        folded = fold(text)
        return [t for sentence in folded.split("。") for t in self._sentence_tokens(sentence)]

    def _letters_of(self, doc: int) -> frozenset[str]:
        """A product's Chinese characters, and the syllables of those of its name, category and other names
        (computed when asked, the last few thousand kept: a frozenset per product would cost gigabytes at a
        million products). An input-method typo is of the thing's name (哑玲 → 哑铃), so a homophone counts only
        there: a description's 初学者 does not explain the 雪 of 滑雪板."""
        d = self._docs[doc]
        chars = {c for c in compact(" ".join((d.text, d.category, *d.aliases))) if _is_han(c)}
        named = {c for c in compact(" ".join((d.name, d.category, *d.aliases))) if _is_han(c)}
        return frozenset(chars | {pinyin_of(c) for c in named})

    def token_cover(self, tokens: Sequence[str], rows: np.ndarray | None = None) -> np.ndarray:
        """Per product (or per product of `rows`), the share of the query's words that its document holds (a
        query naming a type and its attributes, '双人 四季 帐篷', is best served by the product holding all of
        them)."""
        distinct = set(tokens)
        hits = [self._postings[t][0] for t in distinct if t in self._postings]
        if rows is not None:
            held = sum((_member(docs, rows) for docs in hits), np.zeros(len(rows)))
            return (held / max(len(distinct), 1)).astype(np.float32)
        if not hits:
            return np.zeros(self.size, dtype=np.float32)
        return (np.bincount(np.concatenate(hits), minlength=self.size) / len(distinct)).astype(np.float32)

    def unexplained(self, q: QueryText, doc: int) -> tuple[float, float]:
        """(share of the query's Chinese characters that product `doc` lacks, 1.0 if its last one is among
        them): 篮球架 asked, 篮球 found — 架 is unexplained, and it is the thing asked for. A homophone of a
        character of the product's name, category or other names (an input-method typo) counts as present."""
        letters = self._letters(doc)
        asked = [c for c in self._asked(q) if c not in _COUNTING]
        if not asked:
            return 0.0, 0.0
        missing = [_lacks(letters, c) for c in asked]
        return sum(missing) / len(missing), float(missing[-1])

    def _asked(self, q: QueryText) -> list[str]:
        """The Chinese characters of the query's content words, a word's noun suffix (鞋子, 袜子, 盒儿) left out:
        it names nothing a product could lack."""
        out: list[str] = []
        for word in self.content_words(q):   # jieba may cut the suffix off a catalog word: 跑步鞋 / 子
            for k, c in enumerate(word):
                suffix = c in NOUN_SUFFIXES and k == len(word) - 1 and (k > 0 or bool(out))
                if _is_han(c) and not suffix:
                    out.append(c)
        return out

    def lacking(self, q: QueryText, doc: int) -> tuple[str, tuple[int, ...], bool] | None:
        """The query's last content word that product `doc` does not explain, the positions of the characters
        it lacks, and whether it is the query's last word (the thing asked for, not a qualifier of it): 足球靴
        asked, 足球鞋 found → (足球靴, (2,), True); 爬山鞋 asked, 登山鞋 found → (爬山, (0,), False). None when
        every word is explained."""
        letters = self._letters(doc)
        words = self.content_words(q)
        for at in range(len(words) - 1, -1, -1):
            word = words[at]
            missing = tuple(k for k, c in enumerate(word)
                            if _is_han(c) and c not in NOUN_SUFFIXES and _lacks(letters, c))
            if missing:
                return word, missing, at == len(words) - 1
        return None

    def kin(self, q: QueryText, doc: int) -> int:
        """How near in meaning (retrieval/thesaurus.py kinship, 0-5) the query's last word that product `doc`
        does not explain is to a word of what `doc` is called (its name, category, other names): 靴 of 足球靴
        to 鞋 of 足球鞋 (3, one class), 安全帽 to 头盔 (4, one word group), 棍 to 杖 (5, synonyms); 线 of
        羽毛球拍线 to 羽毛球拍 (0). 0 when every word is explained."""
        found = self.lacking(q, doc)
        if found is None:
            return 0
        word, missing, _ = found
        # the word, and its part from the first character the product lacks (足球靴 → 靴)
        rest = word[missing[0]:]
        asked = {word, rest, rest.rstrip(NOUN_SUFFIXES)} - {""}
        d = self._docs[doc]
        own = {w for text in (d.base_name, d.category, *d.aliases)
               for w in self.tokenizer.words(fold(text)) if _is_han(w)}
        own |= {w[-1] for w in own}
        return max((kinship(a, b) for a in asked for b in own), default=0)

    def other_kind(self, q: QueryText, doc: int) -> tuple[float, float]:
        """What product `doc` is not, of what the query asks: (1.0 if the query names another kind of thing the
        catalog sells — one of its head nouns — that `doc`'s name and category lack: 网球鞋 asked, 足球鞋 found;
        1.0 if the query's last character ends some head noun of the catalog and `doc`'s name and category lack
        it: 羽毛球拍包 asked, 羽毛球拍 found, while 背包 and 健身包 are sold). A word the catalog never uses as a
        head (足球靴) says neither: it may be another name of the same thing."""
        d = self._docs[doc]
        own = compact(f"{d.base_name}{d.category}")
        folded = compact(q.folded)
        # the query's own substrings looked up among the head nouns: a few dozen lookups, not a pass over every
        # head noun of the catalog (tens of thousands in a large one)
        other = any((word := folded[i:j]) in self._heads and word not in own
                    for i, j in _spans(folded, max_len=self._head_longest))
        last = self._asked(q)[-1:]
        ends = bool(last) and last[0] in self._head_ends and last[0] not in own
        return float(other), float(ends)

    def kind_match(self, q: QueryText, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(head, category): 1 where the query names the product's head noun (literally or as a homophone)
        or a word of its category; per product, or per product of `rows`."""
        def mark(out: np.ndarray, docs: np.ndarray) -> None:
            if rows is None:
                out[docs] = 1.0
            else:
                out[_member(docs, rows)] = 1.0

        size = self.size if rows is None else len(rows)
        head = np.zeros(size, dtype=np.float32)
        for word in self._heads_named(q.folded):
            mark(head, self._heads[word])
        kind = np.zeros(size, dtype=np.float32)
        for token in set(q.tokens):
            if token in self._kinds:
                mark(kind, self._kinds[token])
        return head, kind

    def _heads_named(self, folded: str) -> set[str]:
        """The head nouns a query names, literally or as a homophone (a run of its syllables spells one): its
        substrings and syllable runs looked up, a few dozen lookups whatever the catalog's size."""
        named = {folded[i:j] for i, j in _spans(folded, 1, self._head_longest) if folded[i:j] in self._heads}
        syllables = pinyin_of(folded).split()
        for i in range(len(syllables)):
            for j in range(i + 1, min(len(syllables), i + self._head_syllables) + 1):
                named.update(self._head_sounds.get(" ".join(syllables[i:j]), ()))
        return named

    def _index_name(self, i: int, doc: RetrievalDoc, name_tokens: list[str], names, sounds, pairs,
                    sound_of: dict[str, str], loose: set[str], counts: set[str]) -> None:
        whole = compact(doc.base_name)
        parts = {whole: 1.0} | {t: PART_NAME_SCORE for t in name_tokens if len(t) >= 2 and t != whole}
        parts |= {a: 1.0 for a in map(compact, doc.aliases) if len(a) >= 2}   # the catalog's other names
        for text, score in parts.items():
            names[text].append((i, score * len(text)))
            if _is_han(text):
                if text not in sound_of:   # (a whole name is spelled once: pinyin of a million names takes minutes)
                    sound_of[text] = pinyin_of(text)
                sounds[sound_of[text]].append((i, score * len(text) * PINYIN_SCORE))
        for k in range(len(whole) - 1):
            pair = whole[k:k + 2]
            if _is_han(pair) and pair not in parts:
                pairs[pair].add(i)
        loose.update(_loose_pieces(whole, name_tokens))
        if "人" in whole:   # (read in the name as folded, not compacted: 1-2人 is no 12人)
            counts.update(m.group(0) for m in _HEADCOUNT.finditer(fold(doc.base_name)))
        brand = compact(doc.brand)
        if len(brand) >= 2:
            self._brands[brand].append(i)

    def analyze(self, query: str) -> QueryText:
        """Fold and tokenize a query once, for every lexical signal; a homophone of a name piece the catalog
        knows is spelled as the catalog spells it (input-method typos: 哑玲 → 哑铃, 兰球 → 篮球), a clipped brand
        written out (阿迪 → 阿迪达斯)."""
        plain = compact(query)[:MAX_QUERY_CHARS]
        folded = self.respell(self.unclip(plain)[:MAX_QUERY_CHARS])   # a brand written out is longer
        words = self.tokenizer.words(folded)
        shaped = self.respell_shapes(folded, words)
        if shaped != folded:
            folded, words = shaped, self.tokenizer.words(shaped)
        # (tokens come from the query as written when nothing was respelled: its spaces separate Latin words)
        return QueryText(folded, self.tokenizer.tokens(query if folded == plain else folded), words)

    def respell_shapes(self, folded: str, words: Sequence[str]) -> str:
        """A character of a short query (fewer than SHAPE_MAX_WORDS content words) that no name of the catalog
        uses, inside what would otherwise spell a name piece with a character that looks like it
        (retrieval/shapes.py), is read as that character: 护锞 → 护踝, 唾袋 → 睡袋. The longest such piece wins.
        A character of a word the dictionary knows as written (羽绒被, 枕头) is not a typo, and a described need
        is left as written (its common characters look like some name's: 打 of 被球打得 and 拍 of 球拍).
        `words`: the text's precise-mode words."""
        spans, at = [], 0
        for word in words:
            at = folded.find(word, at)
            if at < 0:   # a word jieba wrote otherwise than the text: read nothing as a typo
                return folded
            if word not in STOPWORDS:
                spans.append((at, at + len(word)))
            at += len(word)
        if not 0 < len(spans) < SHAPE_MAX_WORDS:
            return folded
        out = list(folded)
        for k in (k for start, end in spans for k in range(start, end)):
            c = folded[k]
            if not _is_han(c) or c in self._name_chars or self._in_a_word(folded, k):
                continue
            best: tuple[int, str] | None = None
            for alike in self._shapes.of(c):
                for i in range(max(0, k - MAX_SHAPE_PIECE + 1), k + 1):
                    for j in range(max(k + 1, i + 2), min(len(folded), i + MAX_SHAPE_PIECE) + 1):
                        if (best is None or j - i > best[0]) and self._spells_a_name(f"{folded[i:k]}{alike}{folded[k + 1:j]}"):
                            best = (j - i, alike)
            if best is not None:
                out[k] = best[1]
        return "".join(out)

    def _spells_a_name(self, text: str) -> bool:
        """Whether `text` is a name piece, or runs along some name two characters at a time (动力绳 of 9.8毫米动力绳,
        whose words jieba cuts to single characters: 动力 and 力绳 are pairs of a name)."""
        return text in self._names or all(text[n:n + 2] in self._pairs for n in range(len(text) - 1))

    @staticmethod
    def _in_a_word(folded: str, k: int) -> bool:
        """Whether the character at `k` is part of some word of jieba's own dictionary in `folded`."""
        return any(known_word(folded[i:j]) for i in range(max(0, k - 3), k + 1)
                   for j in range(max(k + 1, i + 2), min(len(folded), i + 4) + 1))

    def respell(self, folded: str) -> str:
        syllables = _syllables(folded)
        out, i = [], 0
        while i < len(folded):
            for j in range(min(len(folded), i + 8), i + 1, -1):
                piece = folded[i:j]
                if not _is_han(piece):
                    continue
                if piece in self._names:
                    break
                spelled = self._spelled(piece, " ".join(syllables[i:j]))
                if spelled is not None:
                    out.append(spelled)
                    i = j
                    break
            else:
                out.append(folded[i])
                i += 1
                continue
            if piece in self._names:
                out.append(folded[i:j])
                i = j
        return "".join(out)

    def _spelled(self, written: str, sound: str) -> str | None:
        """How the catalog writes the name piece `written` sounds like: of several (水袋 and 睡袋 for 水代), the one
        keeping most of its characters in place — an input-method typo changes a character, not every one."""
        def kept(piece: str) -> int:
            return sum(a == b for a, b in zip(piece, written, strict=False))
        ways = self._homophones.get(sound) or ((self._spelling[sound],) if sound in self._spelling else ())
        best = max(reversed(ways), key=kept, default=None)   # equal: the last way, as `_spelling` holds
        # a sound-alike that keeps none of them is another word, not a typo of this one (帐逢 is not the series
        # name 长风: its 逢 is a shape typo of 篷, respell_shapes)
        return best if best is not None and kept(best) else None

    def head_counts(self, query: str) -> str:
        """The catalog's other ways of writing how many people the query's thing is for (单人帐 → 1人 where the
        catalog's tents say 1人 and its mats 单人; 四人 → 4人): one number, written as digits or in words."""
        asked = [m.group(0) for m in _HEADCOUNT.finditer(fold(query)[:MAX_QUERY_CHARS])]
        out = [other for form in asked for other in self._counts.get(_people(form), ()) if other != form]
        return " ".join(dict.fromkeys(out))

    def content_words(self, q: QueryText) -> list[str]:
        """The query's words that carry meaning (precise mode, stopwords dropped)."""
        return [w for w in q.words if w not in STOPWORDS]

    def _name_pieces(self, q: QueryText) -> Iterator[tuple[str, str, _Found, _Found, np.ndarray | None]]:
        """(piece, its syllables, its products as a literal name piece, as a homophone of one, as a pair of a
        name's characters) for each piece of the query that is one of these: the lookups of name_match and
        touched."""
        syllables = _syllables(q.folded)
        for i, j in _spans(q.folded):
            piece, sound = q.folded[i:j], " ".join(syllables[i:j])
            literal = self._names.get(piece)
            sounded = self._sounds.get(sound) if _is_han(piece) else None
            pairs = self._pairs.get(piece) if j - i == 2 else None
            if literal is not None or sounded is not None or pairs is not None:
                yield piece, sound, literal, sounded, pairs

    def _best_uncached(self, kind: str, key: str, read: int) -> tuple[np.ndarray, np.ndarray]:
        """The `read` products of highest weight of one weighted posting list (`kind` t: a word's BM25 postings,
        n / s: a name piece's literal and homophone products), ascending like the list; equal weights keep the
        first products."""
        docs, weights = self._postings[key] if kind == "t" else (self._names if kind == "n" else self._sounds).get(key)
        keep = np.sort(np.argsort(-weights, kind="stable")[:read])
        return docs[keep], weights[keep]

    def _read(self, kind: str, key: str, docs: np.ndarray, weights: np.ndarray | None,
              read: int | None) -> tuple[np.ndarray, np.ndarray | None]:
        """A posting list as a search over `read`-limited touched products reads it (all of it when short); a list
        of equal weights (a brand's, a character pair's: `weights` None) is read from its start."""
        if read is None or len(docs) <= read:
            return docs, weights
        if weights is None:
            return docs[:read], None
        return self._best_of(kind, key, read)

    def _brands_held(self, q: QueryText, read: int | None = None) -> Iterator[np.ndarray]:
        """The products of each brand the query holds (each brand's first `read` when given)."""
        for i, j in _spans(q.folded):
            if (docs := self._brands.get(brand := q.folded[i:j])) is not None:
                yield self._read("b", brand, docs, None, read)[0]

    def touched(self, q: QueryText, more: Sequence[np.ndarray] = (), read: int | None = None) -> Touched:
        """The products `q`'s words touch — in BM25's postings, a name piece (literally, by sound, a pair of its
        characters) or a brand the query holds — and those of `more`: what bm25, name_match and brand_match
        score above 0 for `q` is among them (a superset: a piece the scoring then voids is in too). With `read`,
        only each list's best `read` products are touched, and bm25, name_match and brand_match over this
        touch read those alone (a large catalog's candidates; at_rows gives their exact values)."""
        hit = [docs for docs, _ in self._postings_of(q.tokens, read)]
        for piece, sound, literal, sounded, pairs in self._name_pieces(q):
            hit += [self._read(kind, key, *found, read)[0]
                    for kind, key, found in (("n", piece, literal), ("s", sound, sounded)) if found is not None]
            hit += [self._read("p", piece, pairs, None, read)[0]] if pairs is not None else []
        return touch(self.size, [*hit, *self._brands_held(q, read), *more], read)

    def _postings_of(self, tokens: Sequence[str], read: int | None) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self._read("t", t, *self._postings[t], read) for t in set(tokens) if t in self._postings]

    def bm25(self, tokens: Sequence[str], within: Products | None = None) -> np.ndarray:
        """Per product (per touched product, `within`), the BM25 score of the query's words."""
        over = within or AllProducts(self.size)
        hits = self._postings_of(tokens, over.read)
        if not hits:
            return np.zeros(over.size, dtype=np.float32)
        rows = over.slots(np.concatenate([h[0] for h in hits]))
        weights = np.concatenate([h[1] for h in hits])
        return np.bincount(rows, weights=weights, minlength=over.size).astype(np.float32)

    def at_rows(self, q: QueryText, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(BM25, name match before its scaling to the best product, brand match) of the products at `rows`
        (ascending catalog positions), exactly as over the whole catalog: each posting list looked up at the
        rows by binary search, never read whole."""
        sums = np.zeros(len(rows), dtype=np.float64)
        for docs, weights in self._postings_of(q.tokens, None):   # summed in bm25's order: the same float sums
            at, held = _lookup(docs, rows)
            sums[held] += weights[at[held]]
        name = np.zeros(len(rows), dtype=np.float32)
        for docs, weight in self._name_hits(q, None):
            at, held = _lookup(docs, rows)
            values = weight[at[held]] if isinstance(weight, np.ndarray) else weight
            name[held] = np.maximum(name[held], values)
        brand = np.zeros(len(rows), dtype=np.float32)
        for docs in self._brands_held(q):
            brand[_lookup(docs, rows)[1]] = 1.0
        return sums.astype(np.float32), name, brand

    def name_match(self, q: QueryText, within: Products | None = None) -> np.ndarray:
        """Per product (per touched product, `within`), in 0..1: how long a piece of its name the query holds
        (literally, as a homophone, or as two shared characters), relative to the best match of any product.

        A piece inside a longer word the catalog does not know is no match (跑步机 is not 跑步鞋,
        滑板车 is not 滑板), nor is a piece under a qualifier the catalog does not know
        (拳击手套 is not 健身手套)."""
        over = within or AllProducts(self.size)
        scores = self.name_scores(q, over)
        top = scores.max() if len(scores) else 0
        return scores / top if top > 0 else scores

    def name_scores(self, q: QueryText, over: Products) -> np.ndarray:
        """name_match before its scaling to the best product."""
        scores = np.zeros(over.size, dtype=np.float32)
        for docs, weight in self._name_hits(q, over.read):
            _raise(scores, over.slots(docs), weight)
        return scores

    def _name_hits(self, q: QueryText, read: int | None) -> Iterator[tuple[np.ndarray, np.ndarray | float]]:
        """(products, their weight) of each name piece the query holds, as name_match scores them (each list's
        best `read` products when given)."""
        foreign = [w for w in plain_words(q.folded) if len(w) >= 3 and w not in self.vocabulary
                   and w not in self._names]
        for piece, sound, literal, sounded, pairs in self._name_pieces(q):
            if any(piece in w and piece != w for w in foreign):
                continue
            qualified = self._qualified_by_unknown(piece, q.words)  # voids partial matches only
            for kind, key, found, full in (("n", piece, literal, len(piece)),
                                           ("s", sound, sounded, len(piece) * PINYIN_SCORE)):
                if found is not None:
                    docs, weights = self._read(kind, key, *found, read)
                    keep = weights >= full if qualified else slice(None)
                    yield docs[keep], weights[keep]
            if pairs is not None and not qualified:
                yield self._read("p", piece, pairs, None, read)[0], PAIR_SCORE * 2

    def _qualified_by_unknown(self, piece: str, words: list[str]) -> bool:
        """True when the word right before `piece` is a content word the catalog never uses."""
        for k, word in enumerate(words):
            if word == piece and k > 0:
                before = words[k - 1]
                if len(before) >= 2 and before not in STOPWORDS and before not in self.vocabulary:
                    return True
        return False

    def brand_match(self, q: QueryText, within: Products | None = None) -> np.ndarray:
        """Per product (per touched product, `within`): 1.0 when the query holds its brand."""
        over = within or AllProducts(self.size)
        scores = np.zeros(over.size, dtype=np.float32)
        for docs in self._brands_held(q, over.read):
            scores[over.slots(docs)] = 1.0
        return scores
