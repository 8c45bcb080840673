"""Hybrid product search: dense (embeddings) fused with lexical (BM25 + name/brand matches), and a
confidence rule so that a thing the shop does not sell returns no candidates at all."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import numpy as np

from retrieval.ann import ANN_THRESHOLD, LEXICAL_CANDIDATES, ApproximateDense, Generation, current_generation
from retrieval.bridge import BRIDGE_MAX_WORDS, ChineseBridge, foreign_words
from retrieval.documents import RetrievalDoc
from retrieval.embedders import Embedder, EmbeddingError, QueryVectorCache
from retrieval.glosses import EnglishEvidence
from retrieval.index import VectorIndex
from retrieval.lexical import MAX_QUERY_CHARS, POSTINGS_READ, LexicalIndex
from retrieval.ranker import Ranker, load_rankers
from retrieval.synonyms import (
    HeadFamilies,
    PinyinNames,
    ShortForms,
    SynonymMatch,
    SynonymTable,
    unknown_words,
)
from retrieval.text import compact, has_han
from retrieval.thesaurus import SYNONYMS
from retrieval.touched import AllProducts, Touched

log = logging.getLogger(__name__)
T = TypeVar("T")

# A large catalog's ANN neighbours (the graph search and their rows' exact scores, in C and numpy with the GIL
# released) are searched on this thread while the searching thread computes the lexical side, so a search uses
# both cores; the results are the same either way (tests/test_retrieval_scale.py). Measured in
# bench/retrieval_scale.py, which times both orders interleaved query by query.
DENSE_BESIDE_LEXICAL = True
_DENSE_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ann-neighbours")
# A large catalog's lazily read tables (the bridge's English words: 20 s at a million products, bench/README)
# are read on this thread right after start-up, so no customer's query waits for them
_WARM_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="search-warm")


def _report_warm_failure(done: Future) -> None:
    """Log a background reading that failed (a query that needs the table reads it again, and fails alike)."""
    if not done.cancelled() and done.exception() is not None:
        log.error("reading the search's tables after start-up failed", exc_info=done.exception())


@dataclass
class Signals:
    """Per-product signals for one query, plus the query-level facts the confidence rule reads."""

    name: np.ndarray
    brand: np.ndarray
    bm25: np.ndarray           # normalized to 0..1 by the best product
    bm25_max: float            # the best raw BM25 score
    coverage: float            # share of the query's words found anywhere in the catalog
    latin: bool                # the query is written in Latin letters
    words: int                 # content words in the query: a short noun phrase or a described need
    dense_z: np.ndarray | None = None   # ranking: mean of the product's views
    best_document_z: float | None = None  # the confidence rule: best document-view z among the top ranked
    view_z: tuple[np.ndarray, ...] = ()   # each view's z-scores (document, name+usage, bare name)
    token_cover: np.ndarray | None = None  # share of the query's words each product holds
    head: np.ndarray | None = None         # the query names the product's head noun
    category: np.ndarray | None = None     # the query names a word of the product's category
    unexplained: Callable[[int], tuple[float, float]] | None = None   # the query's words a product lacks
    other_kind: Callable[[int], tuple[float, float]] | None = None    # the query names another kind of thing
    kin: Callable[[int], int] | None = None   # how near in meaning its unexplained word is to the product's name
    kin_english: Callable[[int], float] | None = None   # how much the product's English words say that word (靴: boots)
    synonyms: SynonymMatch | None = None   # the query's unknown words matched to the catalog's head nouns
    unknown: float = 0.0                   # share of the query's content words the catalog never uses
    pinyin: np.ndarray | None = None       # a query typed in pinyin spells the product's name (paobuxie)
    family: np.ndarray | None = None       # the query's last word is a hypernym of these products (运动鞋)
    short_form: np.ndarray | None = None   # a query word is a short form of the product's name (跑鞋, 跑步鞋)
    # the English evidence (retrieval/glosses.py ENGLISH_FEATURES, one row per product): the query's English
    # words read through a dictionary, its Latin words in the product's own, its number+unit pairs; None for a
    # query with a Chinese character (or without a Latin word), which the ranker then scores exactly as before
    english: np.ndarray | None = None
    # the Chinese synonym bridge (retrieval/bridge.py BRIDGE_FEATURES, one row per product): the query's Chinese
    # words the catalog never uses read through a Chinese→English dictionary against the products' English
    # words; None when the query has no such word with a reading, or no product is linked to one (scored and
    # gated exactly as before)
    bridge: np.ndarray | None = None
    # A large catalog's signals hold its candidates only (take): their positions in the catalog, and the
    # whole catalog's best name match, brand match and bare-name z, which the gate reads
    rows: np.ndarray | None = None
    catalog_max: tuple[float, float, float] | None = None

    def take(self, rows: np.ndarray, within: Touched | None = None) -> Signals:
        """These signals for the products at `rows` alone (the per-product arrays cut, the query-level facts
        kept, the gate's catalog-wide maxima read before the cut). `within`: the lexical arrays (name, brand,
        BM25, pinyin) are over the products the query's words touch, not over the catalog."""
        def cut(values: np.ndarray | None) -> np.ndarray | None:
            return values[rows] if values is not None else None

        def moved(read: Callable[[int], T] | None) -> Callable[[int], T] | None:   # a per-product reading
            return (lambda i: read(int(rows[i]))) if read is not None else None

        def lexical(values: np.ndarray | None) -> np.ndarray | None:
            return cut(values) if within is None or values is None else within.at(values, rows)

        view_max = float(self.view_z[2].max()) if self.view_z and len(self.view_z[2]) else 0.0
        synonyms = self.synonyms
        return replace(
            self, name=lexical(self.name), brand=lexical(self.brand), bm25=lexical(self.bm25),
            dense_z=cut(self.dense_z), view_z=tuple(v[rows] for v in self.view_z), token_cover=cut(self.token_cover),
            head=cut(self.head), category=cut(self.category), pinyin=lexical(self.pinyin), family=cut(self.family),
            short_form=cut(self.short_form), english=cut(self.english), bridge=cut(self.bridge),
            unexplained=moved(self.unexplained), other_kind=moved(self.other_kind), kin=moved(self.kin),
            kin_english=moved(self.kin_english),
            synonyms=replace(synonyms, word=synonyms.word[rows], morpheme=synonyms.morpheme[rows],
                             query=synonyms.query[rows]) if synonyms is not None else None,
            rows=rows, catalog_max=(float(self.name.max(initial=0.0)), float(self.brand.max(initial=0.0)), view_max))

    def position(self, i: int) -> int:
        """The catalog position of the product at index `i` of these signals."""
        return int(self.rows[i]) if self.rows is not None else int(i)

    def features(self) -> np.ndarray:
        """The ranker's per-product features (retrieval/ranker.py FEATURES), one row per product."""
        zero = np.zeros_like(self.name)
        dense = self.dense_z if self.dense_z is not None else zero
        document, usage, name = self.view_z if self.view_z else (zero, zero, zero)
        described = float(self.words >= 3)
        synonyms = self.synonyms
        word, query, morpheme = (synonyms.word, synonyms.query, synonyms.morpheme) if synonyms else (zero, zero, zero)
        return np.stack([self.name, self.brand, self.bm25, self.bm25 * self.coverage, dense, document, usage, name,
                         self.token_cover, self.head, self.category, dense * float(self.latin),
                         dense * described, self.name * self.head, word, query, query * float(self.latin), morpheme,
                         morpheme * word, self.pinyin if self.pinyin is not None else zero,
                         self.short_form if self.short_form is not None else zero],
                        axis=1).astype(np.float32)

    def gate_features(self, scores: np.ndarray, best: int, runner_up: float) -> np.ndarray:
        """The gate's per-query features (retrieval/ranker.py GATE_FEATURES), read at the best product."""
        dense = float(self.dense_z[best]) if self.dense_z is not None else 0.0
        document_z = self.best_document_z if self.best_document_z is not None else 0.0
        name = self.view_z[2] if self.view_z else np.zeros(1)
        # characters unexplained by the product say "not sold" of a short noun phrase (篮球架 → 篮球); a described
        # need is explained by meaning, not by its characters (骑车时头老出汗 → 运动头带)
        short = self.unexplained is not None and self.words < 3
        share, last = self.unexplained(best) if short else (0.0, 0.0)
        other, other_end = self.other_kind(best) if short and self.other_kind is not None else (0.0, 0.0)
        # …unless a thesaurus says the unexplained word is another name of the same kind (足球靴 for 足球鞋)
        kin = self.kin(best) if short and share and self.kin is not None else 0
        # …or the product's English names say it (登山靴 → boots: 徒步登山鞋, hiking boots)
        kin_english = self.kin_english(best) if short and share and self.kin_english is not None else 0.0
        synonyms = self.synonyms
        name_max, brand_max, view_max = self.catalog_max or (self.name.max(), self.brand.max(), None)
        return np.array([scores[best], scores[best] - runner_up, name_max, brand_max,
                         self.head[best], self.category[best], self.token_cover[best], self.coverage,
                         document_z, dense, float(self.latin), float(self.words >= 3),
                         np.log1p(self.bm25_max), name[best] if self.view_z else 0.0,
                         float(name.max()) if view_max is None else view_max,
                         share, last, synonyms.word[best] if synonyms else 0.0,
                         synonyms.query[best] if synonyms else 0.0, synonyms.last if synonyms else 0.0,
                         synonyms.morpheme[best] if synonyms else 0.0, synonyms.breadth if synonyms else 0.0,
                         synonyms.morpheme[best] * synonyms.breadth if synonyms else 0.0,
                         self.unknown, self.pinyin[best] if self.pinyin is not None else 0.0,
                         other, other_end, float(kin == SYNONYMS), float(kin_english >= 1.0)], dtype=np.float32)


CONFIDENCE_POOL = 64


def _spread(vector: np.ndarray, stats: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
    """Mean and standard deviation of q·v over the catalog, from its mean vector and Gram matrix."""
    mean_vector, gram = stats
    mean = float(vector @ mean_vector)
    return mean, float(np.sqrt(max(float(vector @ gram @ vector) - mean * mean, 1e-12)))


def _first_missing(positions: np.ndarray, size: int) -> np.ndarray:
    """The first catalog position (of `size`) not in `positions` (ascending, distinct), as an array of one, or of
    none when every position is in them."""
    gaps = np.flatnonzero(positions != np.arange(len(positions)))
    first = int(gaps[0]) if len(gaps) else len(positions)
    return np.array([first] if first < size else [], dtype=np.int64)


def _scaled(values: np.ndarray, top: float) -> np.ndarray:
    """`values` relative to the best one, `top` (as they are when nothing scores)."""
    return values / top if top > 0 else values


def _top_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first."""
    if len(scores) > k:
        head = np.argpartition(-scores, k - 1)[:k]
        return head[np.argsort(-scores[head], kind="stable")]
    return np.argsort(-scores, kind="stable")


PER_KIND = 32   # a large catalog's lexical candidates hold at most this many of one kind of thing (head noun)…
KIND_POOL = 8   # …chosen among this many times LEXICAL_CANDIDATES of the best


def _spread_top(scores: np.ndarray, kinds: np.ndarray, k: int, per_kind: int) -> np.ndarray:
    """Indices of the k best scores, best first, at most `per_kind` of one kind (`kinds`: an id per score) while
    the best KIND_POOL·k hold other kinds; the rest of the k by score. A catalog's many variants of one thing
    (1,800 running belts that all hold 跑步 often) would otherwise fill every slot by their lexical score alone,
    and the thing the ranker prefers (跑步鞋) would never be ranked."""
    pool = _top_indices(scores, k * KIND_POOL)
    ids = kinds[pool]
    order = np.argsort(ids, kind="stable")   # each kind's places in `pool`, best first
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    rank = np.empty(len(pool), dtype=np.int64)
    rank[order] = np.arange(len(pool)) - np.repeat(starts, np.diff(np.r_[starts, len(pool)]))
    kept = pool[rank < per_kind][:k]
    if len(kept) < k:   # few kinds: the best of the others too
        kept = np.concatenate([kept, pool[rank >= per_kind][:k - len(kept)]])
        kept = kept[np.argsort(-scores[kept], kind="stable")]
    return kept


@dataclass(frozen=True)
class Candidate:
    product_id: str
    product_name: str
    retrieval_score: float

    def as_tool_result(self) -> dict:
        return {"product_id": self.product_id, "product_name": self.product_name,
                "retrieval_score": round(self.retrieval_score, 4), "is_verified_fact": False}


@dataclass(frozen=True)
class Found:
    """A search's candidates, and why it was lexical only when it should have been hybrid."""

    candidates: list[Candidate]
    lexical_only: str = ""


CatalogLoader = Callable[[], Awaitable[Sequence[RetrievalDoc]]]
REFRESH_SECONDS = 2.0   # how often a search over an ANN generation looks for a newer one (a small file read)


class _Follower:
    """What a search over an ANN generation needs to follow its index: the index path, how to read the
    catalog again, when it last looked, and the switch under way (one at a time)."""

    def __init__(self, index_path: Path, catalog: CatalogLoader | None, interval: float):
        self.index_path, self.catalog, self.interval = index_path, catalog, interval
        self.next_check = time.monotonic() + interval
        self.task: asyncio.Task | None = None


class ProductSearch:
    """Holds the catalog's retrieval documents, the lexical index and (optionally) the vectors.

    Over an ANN generation (a large catalog) it follows the index: when a newer generation is published (the
    pointer file beside the index, read at most every REFRESH_SECONDS, off the event loop), a new search state
    is built in a worker thread — the catalog read again through `catalog` when given — and switched in
    between searches. Every search reads one state from start to end (`_snapshot`): a search in flight
    finishes on the generation it started on, whose memory-mapped files outlive their unlink."""

    def __init__(self, docs: Sequence[RetrievalDoc], embedder: Embedder | None = None,
                 index: VectorIndex | Generation | None = None, rankers: dict[str, Ranker] | None = None,
                 catalog: CatalogLoader | None = None, refresh_seconds: float = REFRESH_SECONDS):
        self.docs = list(docs)
        self._follower = (_Follower(index.path, catalog, refresh_seconds)
                          if isinstance(index, Generation) and index.path is not None else None)
        self._position = {d.product_id: i for i, d in enumerate(self.docs)}
        self.lexical = LexicalIndex(self.docs)
        heads = self.lexical.head_of   # what each product is (跑步鞋)
        self._pinyin = PinyinNames(len(self.docs), self.lexical.spelling, self.lexical.name_piece)
        self._families = HeadFamilies(self.docs, heads)
        self._short_forms = ShortForms(self.docs)
        self._english = EnglishEvidence(self.docs)
        self._bridge = ChineseBridge(self.docs, heads)   # its English words are read at the first query that needs them
        self.warmed: Future | None = None   # …or, for a large catalog, at once on a background thread
        self._rankers = rankers   # the shipped learned fusion unless given; read at the first search
        self._cache = QueryVectorCache(embedder) if embedder is not None and index is not None else None
        self._matrix: np.ndarray | ApproximateDense | None = None
        self._ann: ApproximateDense | None = None
        if self._cache is not None and isinstance(index, Generation):   # a large catalog (retrieval/ann.py)
            self.warmed = _WARM_THREAD.submit(self._bridge.ready)
            self.warmed.add_done_callback(_report_warm_failure)
            self._ann = self._matrix = ApproximateDense(index, [d.product_id for d in self.docs])
            self._has_vector, self._stats = self._ann.present, self._ann.stats
            generation, row_of_doc = self._ann.generation, self._ann.row_of_doc
            self._synonyms = SynonymTable(   # the bare-name view (2) of a few rows of the memory map per head noun
                heads, lambda rows: generation.vectors[np.sort(row_of_doc[rows]), 2], self._ann.dimensions,
                self._has_vector)
        elif self._cache is not None:
            positions, vectors, names = index.vectors_for([d.product_id for d in self.docs])
            self._has_vector = np.zeros(len(self.docs), dtype=bool)
            self._has_vector[positions] = True
            missing = len(self.docs) - len(positions)
            if missing:
                log.warning("%d products are not in the search index yet; run `python bot.py build-index`",
                            missing)
            # Ranking reads the mean of the views; the confidence rule reads the document view alone.
            self._matrix = self._rows(positions, vectors.mean(axis=1), index.dimensions)
            self._document = self._rows(positions, vectors[:, 0], index.dimensions)
            self._usage = self._rows(positions, vectors[:, 1], index.dimensions)
            self._names = self._rows(positions, names, index.dimensions)
            self._stats = {name: self._moments(m) for name, m in (("rank", self._matrix), ("doc", self._document),
                                                                  ("usage", self._usage), ("name", self._names))}
            self._synonyms = SynonymTable(heads, lambda rows: self._names[rows], index.dimensions, self._has_vector)

    def _snapshot(self) -> ProductSearch:
        """This search's current state, for one search from start to end: a switch to a newer generation
        replaces the whole attribute dict in one assignment, never one attribute at a time."""
        self._follow()
        view = object.__new__(type(self))
        view.__dict__ = self.__dict__
        return view

    def _follow(self) -> None:
        """Start looking for a newer generation (a background task) when REFRESH_SECONDS have passed."""
        follower = self._follower
        if follower is None or (follower.task is not None and not follower.task.done()):
            return
        now = time.monotonic()
        if now < follower.next_check:
            return
        follower.next_check = now + follower.interval
        try:
            follower.task = asyncio.get_running_loop().create_task(self.refresh())
        except RuntimeError:   # no event loop (a synchronous caller): the next search looks
            pass

    @property
    def pending_refresh(self) -> asyncio.Task | None:
        """The look for a newer generation under way (or last finished), if any."""
        return self._follower.task if self._follower is not None else None

    async def refresh(self) -> bool:
        """Switch to the newest ANN generation when it is newer than the one searched (True when switched).
        The generation is opened and the new state built in a worker thread; searches go on meanwhile."""
        follower, ann = self._follower, self._ann
        if follower is None or ann is None:
            return False
        newest = await asyncio.to_thread(current_generation, follower.index_path)
        if newest is None or newest == ann.generation.generation:
            return False
        try:
            docs = list(await follower.catalog()) if follower.catalog is not None else self.docs
            generation = await asyncio.to_thread(Generation.open, follower.index_path, newest)
            fresh = await asyncio.to_thread(type(self), docs, self.embedder, generation, self._rankers)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("search index generation %s not opened, searching generation %d (%s)", newest,
                        ann.generation.generation, exc)
            return False
        fresh._follower, fresh._cache = follower, self._cache   # one follower; the query vectors stay valid
        if fresh._rankers is None:
            fresh._rankers = self._rankers
        self.__dict__ = fresh.__dict__
        log.info("search switched to index generation %d (%d products)", generation.generation, len(docs))
        return True

    @property
    def embedder(self) -> Embedder | None:
        """The embedder behind the dense side, or None when the search is lexical only."""
        return self._cache.embedder if self._cache is not None else None

    def _rows(self, positions: np.ndarray, vectors: np.ndarray, dimensions: int) -> np.ndarray:
        matrix = np.zeros((len(self.docs), dimensions), dtype=np.float32)
        matrix[positions] = vectors
        return matrix

    def _moments(self, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Catalog-wide mean vector and Gram matrix, so the mean and spread of q·v over every product
        come from a d×d product per query: mean = q·μ, E[(q·v)²] = qᵀ G q with G = VᵀV / n."""
        present = matrix[self._has_vector] if self._has_vector.any() else matrix[:1]
        return present.mean(axis=0), (present.T @ present) / max(len(present), 1)

    @staticmethod
    def _z(vector: np.ndarray, rows: np.ndarray, stats: tuple[np.ndarray, np.ndarray],
           present: np.ndarray | None = None) -> np.ndarray:
        """z-scores of q·v for `rows` against the whole catalog's spread; rows without a vector → 0."""
        mean, std = _spread(vector, stats)
        z = (rows @ vector - mean) / std
        if present is not None:
            z[~present] = 0.0
        return z

    async def query_vector(self, query: str) -> np.ndarray | None:
        """The query's vector from this search's embedder (cached), or None when the search is lexical."""
        return await self._cache.vector(query) if self._cache is not None else None

    async def prime(self, queries: Sequence[str]) -> None:
        """Embed a batch of queries (as the catalog spells them: `_reading`), and their words the catalog never
        uses, ahead of their searches (an evaluation run)."""
        if self._cache is not None:
            read = await asyncio.to_thread(lambda: [self._reading(q) for q in queries])
            await self._cache.prime(list(dict.fromkeys([*(m for m, _ in read), *(w for _, ws in read for w in ws)])))

    def _reading(self, query: str) -> tuple[str, list[str]]:
        """What is embedded for `query`, from one lexical reading of it: the query as the catalog would spell it
        — typed in pinyin, with the catalog's characters it spells beside it (tiaosheng 跳绳); an input-method or
        shape-alike typo respelled (哑玲 → 哑铃, 护锞 → 护踝); else as written (an embedder reads a typo as another
        word) — and its words the catalog never uses."""
        q = self.lexical.analyze(query)
        unknown = unknown_words(self.lexical.content_words(q), self.lexical.vocabulary, query)
        if spelled := self._pinyin.spelled(query):
            return f"{query} {spelled}", unknown
        return (q.folded if q.folded != compact(query)[:MAX_QUERY_CHARS] else query), unknown

    async def _word_vectors(self, words: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors of the query's words the catalog never uses (the synonym table matches them to the
        catalog's head nouns); none when the embedder fails on them."""
        try:
            return {w: await self._cache.vector(w) for w in words}
        except EmbeddingError as exc:
            log.warning("no synonyms for this query (%s)", exc)
            return {}

    async def closeness(self, query: str, product_ids: Sequence[str]) -> dict[str, float]:
        """How close each of `product_ids` is to `query` by meaning (z-scores against the whole catalog);
        empty when the search is lexical only or the embedder fails. Used to choose among a few products
        the reader names."""
        state = self._snapshot()
        if state._cache is None or state._matrix is None:
            return {}
        try:
            vector = await state._cache.vector(query)
        except EmbeddingError as exc:
            log.warning("no closeness by meaning (%s)", exc)
            return {}
        rows = [i for pid in dict.fromkeys(product_ids)
                if (i := state._position.get(pid)) is not None and state._has_vector[i]]
        z = state._z(vector, state._matrix[rows], state._stats["rank"]) if rows else []
        return {state.docs[i].product_id: float(score) for i, score in zip(rows, z, strict=True)}

    @property
    def dense(self) -> bool:
        return self._matrix is not None

    async def signals(self, query: str) -> Signals:
        """Every per-product signal for `query` (used by search and by the evaluation).

        The query is embedded on the embedder's thread; the scoring (jieba, pinyin, a pass over every
        product) runs in a worker thread too, so the event loop is never held for milliseconds."""
        state = self._snapshot()
        if state._cache is None:
            return await asyncio.to_thread(state._signals, query, None, {})
        meant, unknown = await state._read(query)
        vector = await state._cache.vector(meant)
        words = await state._word_vectors(unknown) if vector is not None else {}
        return await asyncio.to_thread(state._signals, query, vector, words)

    def _signals(self, query: str, vector: np.ndarray | None, words: dict[str, np.ndarray] | None = None) -> Signals:
        # a large catalog reads the features that do not choose its candidates for the candidates alone
        large = len(self.docs) >= ANN_THRESHOLD
        near: Future | None = None
        if large and vector is not None and self._ann is not None and DENSE_BESIDE_LEXICAL:
            near = _DENSE_THREAD.submit(self._ann.neighbours, vector)
        try:
            return self._signals_for(query, vector, words, large, near)
        finally:
            if near is not None:
                near.cancel()

    def _signals_for(self, query: str, vector: np.ndarray | None, words: dict[str, np.ndarray] | None, large: bool,
                     near: Future | None) -> Signals:
        # a query typed in pinyin is read with the catalog's characters it spells beside it (paobuxie 跑步鞋)
        spelled = self._pinyin.spelled(query)
        written = self.lexical.analyze(f"{query} {spelled}" if spelled else query)
        # …and with the catalog's other ways of writing its head count (单人帐: its tents say 1人), which the
        # lexical signals read; the query's words are still the ones written (a short noun phrase stays one)
        counts = self.lexical.head_counts(query)
        q = self.lexical.analyze(f"{written.folded} {counts}") if counts else written
        # a large catalog's lexical arrays are over the products the query's words touch, not the catalog
        # (each word's best POSTINGS_READ products: the candidates' own values are read exactly below)
        within = self.lexical.touched(q, self._pinyin.docs(query), POSTINGS_READ) if large else None
        bm25 = self.lexical.bm25(q.tokens, within)
        top = float(bm25.max()) if len(bm25) else 0.0
        names = self.lexical.name_scores(q, within or AllProducts(len(self.docs)))
        name_top = float(names.max()) if len(names) else 0.0
        letters = [c for c in query if c.isalpha()]
        content = self.lexical.content_words(written)
        unknown = unknown_words(content, self.lexical.vocabulary, query)
        out = Signals(
            name=_scaled(names, name_top), brand=self.lexical.brand_match(q, within),
            bm25=_scaled(bm25, top), bm25_max=top,
            coverage=sum(t in self.lexical.vocabulary for t in q.tokens) / len(q.tokens) if q.tokens else 0.0,
            latin=bool(letters) and sum(c.isascii() for c in letters) / len(letters) > 0.5,
            words=len(content), token_cover=None if large else self.lexical.token_cover(q.tokens))
        out.unexplained = lambda i: self.lexical.unexplained(q, i)
        out.other_kind = lambda i: self.lexical.other_kind(q, i)
        out.kin = lambda i: self.lexical.kin(q, i)
        out.kin_english = lambda i: (self._bridge.explains(*lacking, i)
                                     if (lacking := self.lexical.lacking(q, i)) else 0.0)
        out.pinyin = self._pinyin.match(query, within)
        out.family = self._families.family(content, self.lexical.vocabulary)
        out.unknown = min(len(unknown) / len(content), 1.0) if content else 0.0
        # the English evidence for a query without a Chinese character ('tent 2 person 4 season'); a Chinese query
        # naming a Latin brand or code ('Campova 长风 IGT桌') is scored without it (5-fold CV on train, lexical mode:
        # read for those too, it cost name, short-name and traditional queries what it won for English ones)
        out.english = (self._english.match(query, self.lexical.vocabulary)
                       if letters and not has_han(query) else None)
        # the bridge reads a short noun phrase naming the thing (背囊, 球袜 有吗), not a described need, whose words
        # describe rather than name it (在绿茵场上用脚踢的皮球: read, the gate refused two such paraphrases of
        # demo_queries.jsonl that it passes without the bridge)
        if has_han(query) and out.words < BRIDGE_MAX_WORDS:
            out.bridge = self._bridge.match(foreign_words(q.folded, q.words, unknown, self.lexical.vocabulary))
        if large:
            taken = self._candidate_signals(out, within, vector, near.result() if near is not None else None)
            rows = taken.rows
            if within.read is not None:
                # the candidates' BM25, name and brand matches as over the whole catalog (the touched products
                # were each word's best few: a candidate may hold a common word beyond them)
                bm25_rows, name_rows, taken.brand = self.lexical.at_rows(q, rows)
                taken.bm25_max = max(top, float(bm25_rows.max(initial=0.0)))
                taken.bm25, taken.name = _scaled(bm25_rows, taken.bm25_max), _scaled(name_rows, name_top)
            taken.token_cover = self.lexical.token_cover(q.tokens, rows)
            taken.head, taken.category = self.lexical.kind_match(q, rows)
            taken.short_form = self._short_forms.match(content, rows)
            if vector is not None:
                taken.synonyms = self._synonyms.match(vector, words or {}, rows)
            return taken
        out.head, out.category = self.lexical.kind_match(q)
        out.short_form = self._short_forms.match(content)
        if vector is not None and self._ann is not None:
            lexical = _top_indices(out.bm25 + out.name + out.brand, LEXICAL_CANDIDATES)
            out.dense_z, out.view_z, out.best_document_z = self._ann.signals(vector, lexical, CONFIDENCE_POOL)
            out.synonyms = self._synonyms.match(vector, words or {})
        elif vector is not None and self._matrix is not None:
            self._dense_signals(out, vector)
            out.synonyms = self._synonyms.match(vector, words or {})
        return out

    def _dense_signals(self, out: Signals, vector: np.ndarray) -> None:
        """The exact dense signals: every product's z-score for the ranking view and each view."""
        out.dense_z = self._z(vector, self._matrix, self._stats["rank"], self._has_vector)
        out.view_z = (self._z(vector, self._document, self._stats["doc"], self._has_vector),
                      self._z(vector, self._usage, self._stats["usage"], self._has_vector),
                      self._z(vector, self._names, self._stats["name"], self._has_vector))
        # The document view is scored only for the top of the ranking: its best z-score is all the
        # confidence rule needs, and a second full pass over the catalog would double the cost.
        top_rows = _top_indices(out.dense_z, CONFIDENCE_POOL)
        out.best_document_z = float(self._z(vector, self._document[top_rows], self._stats["doc"]).max())

    def _candidate_signals(self, out: Signals, within: Touched, vector: np.ndarray | None,
                           near: tuple[np.ndarray, np.ndarray] | None = None) -> Signals:
        """A large catalog (from ANN_THRESHOLD products) ranks its candidates only: the ANN neighbours (or the
        exact scan's best), the best lexical products (BM25, name, brand and pinyin-name matches) and, for a
        hypernym, members of its family. The ranker's features are built for those few hundred rows (a short
        form of a name, 跑鞋 for 跑步鞋, is read for them alone: its words' characters are in too many names); the gate reads the same catalog-wide values as for a small catalog (the z-scores against the
        whole catalog, the best name and brand match of any product)."""
        lexical_score = out.bm25 + out.name + out.brand   # over the touched products (`within`)
        if out.pinyin is not None:
            lexical_score += out.pinyin
        matched = np.flatnonzero(lexical_score > 0)
        hits = within.rows[matched]   # their catalog positions, ascending
        lexical = (hits[_spread_top(lexical_score[matched], self.lexical.head_ids[hits], LEXICAL_CANDIDATES, PER_KIND)]
                   if len(hits) else hits)
        # and one product the query does not match at all: the gate reads the runner-up's score, which for a
        # query matching one product is such a product's
        lexical = np.concatenate([lexical, _first_missing(hits, len(self.docs))])
        if out.family is not None and out.family.any():
            lexical = np.concatenate([lexical, np.flatnonzero(out.family)[:LEXICAL_CANDIDATES]])
        if vector is not None and self._ann is not None:
            scored, dense, views, best_document = self._ann.candidates(vector, lexical, CONFIDENCE_POOL, near)
            rows = np.union1d(scored, lexical).astype(np.int64)   # a lexical candidate without a vector yet: 0
            taken = out.take(rows, within)
            at = np.searchsorted(rows, scored)
            taken.dense_z = np.zeros(len(rows), dtype=np.float32)
            taken.view_z = tuple(np.zeros(len(rows), dtype=np.float32) for _ in range(3))
            taken.dense_z[at] = dense
            for column, values in zip(taken.view_z, views, strict=True):
                column[at] = values
            taken.best_document_z = best_document
            name_max, brand_max, _ = taken.catalog_max
            taken.catalog_max = (name_max, brand_max, float(taken.view_z[2].max()) if len(rows) else 0.0)
            return taken
        if vector is not None and self._matrix is not None:
            self._dense_signals(out, vector)
            lexical = np.concatenate([lexical, _top_indices(out.dense_z, LEXICAL_CANDIDATES)])
        rows = np.unique(lexical).astype(np.int64)
        return out.take(rows if len(rows) else np.zeros(1, dtype=np.int64), within)

    def ranker(self, s: Signals) -> Ranker:
        """The learned fusion for these signals: with the dense side, or for lexical signals alone."""
        if self._rankers is None:
            self._rankers = load_rankers()
        return self._rankers["hybrid" if s.dense_z is not None else "lexical"]

    def fuse(self, s: Signals) -> tuple[np.ndarray, bool]:
        """(scores, confident?): the learned ranker's score per product, and the learned gate's verdict on
        the best one — something the shop does not sell should not be confident."""
        ranker = self.ranker(s)
        scores, gate_scores, best, runner_up = ranker.gate_view(s.features(), s.english, s.bridge)
        bridge = s.bridge[best] if s.bridge is not None else None
        return scores, ranker.gate(s.gate_features(gate_scores, best, runner_up), bridge) >= ranker.gate_threshold

    async def search(self, query: str, top_k: int = 5, within: float | None = None) -> list[Candidate]:
        """The best candidates for `query`; `within` widens the band below the best one that is kept
        (a filtered search keeps more of the relevant products, then lets SQL choose among them).
        An embedder failure is raised (the evaluation must not score a lexical search as hybrid)."""
        state = self._snapshot()
        if not state.docs or not (query or "").strip():
            return []
        meant, unknown = await state._read(query)
        return await state._rank(query, top_k, within, await state.query_vector(meant), unknown)

    async def find(self, query: str, top_k: int = 5, within: float | None = None, *, gated: bool = True) -> Found:
        """`search` for a customer's turn: when the embedder fails (a remote endpoint down, its circuit
        open) the query is ranked by its lexical side alone, and the result says why. `gated=False`: the best
        ranked even when the gate finds nothing the shop sells (for a caller with other evidence to decide)."""
        state = self._snapshot()
        if not state.docs or not (query or "").strip():
            return Found([])
        meant, unknown = await state._read(query)
        try:
            vector = await state.query_vector(meant)
        except EmbeddingError as exc:
            log.warning("lexical search only for this query (%s)", exc)
            return Found(await state._rank(query, top_k, within, None, [], gated), str(exc))
        return Found(await state._rank(query, top_k, within, vector, unknown, gated))

    async def _read(self, query: str) -> tuple[str, list[str]]:
        """`_reading` off the event loop; the query as it is when nothing is embedded."""
        return await asyncio.to_thread(self._reading, query) if self._cache is not None else (query, [])

    async def _rank(self, query: str, top_k: int, within: float | None, vector: np.ndarray | None,
                    unknown: Sequence[str], gated: bool = True) -> list[Candidate]:
        top_k = max(1, min(int(top_k), 10))
        words = await self._word_vectors(unknown) if vector is not None else {}
        signals = await asyncio.to_thread(self._signals, query, vector, words)
        fused, confident = self.fuse(signals)
        if not confident and gated:
            if signals.family is None or not signals.family.any():
                return []
            # a hypernym of a family the shop sells (运动鞋 → 跑步鞋, 篮球鞋…): that family, best first, never
            # "not sold"
            fused = np.where(signals.family, fused, -np.inf)
            order = [i for i in _top_indices(fused, top_k) if signals.family[i]]
            return [self._candidate(signals, i, fused) for i in order]
        order = _top_indices(fused, top_k)
        best = float(fused[order[0]])
        return [self._candidate(signals, i, fused)
                for i in order if float(fused[i]) >= best - (within or self.ranker(signals).keep_within)]

    def _candidate(self, signals: Signals, i: int, fused: np.ndarray) -> Candidate:
        doc = self.docs[signals.position(i)]
        return Candidate(doc.product_id, doc.name, float(fused[i]))
