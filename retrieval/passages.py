"""Search over store-policy chunks: BM25 over jieba words (title and text) fused with dense
embeddings (the same embedder as products) by reciprocal rank. Like product search it only proposes
chunk ids; the chunks themselves are read from the catalog by id."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import re
import tempfile
import weakref
import zipfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval.embedders import Embedder, EmbeddingError, QueryVectorCache
from retrieval.text import plain_words

log = logging.getLogger(__name__)

K1, B = 1.2, 0.75
RRF_K = 10
MIN_COSINE = 0.87       # measured on the policy set: 0.86 lets 1 of 2 absent queries through, 0.88 costs Recall@3
_STOP = frozenset("的 了 吗 呢 吧 啊 呀 么 是 我 你 们 请问 怎么 怎么样 如何 什么 可以 能 能不能 有 没有 要 多久 多少 几 哪 "
                  "这个 那个 一下 一个 下 在 和 或 还 就 都 也 会 吗？ ？ ?".split())


_HAN = re.compile(r"[\u4e00-\u9fff]{2,}")

# the chunks' vectors, remembered per embedder and text: a search built again over the same chunks (each
# Agent builds its own; the evaluation commands and the tests make many) does not embed them again
_REMEMBERED: weakref.WeakKeyDictionary[Embedder, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()


def stored_vectors_path(index_path: Path) -> Path:
    """Where the policy chunks' vectors are kept beside a catalog's search index."""
    return index_path.with_name(index_path.name + ".policies.npz")


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_stored_vectors(path: Path, model: str) -> dict[str, np.ndarray]:
    """The vectors `save_vectors` kept for `model`, by chunk-text hash; none when the file is missing,
    unreadable or made with another model (the chunks are then embedded as the search is built)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["model"]) != model:
                return {}
            return dict(zip((str(k) for k in data["keys"]), np.asarray(data["vectors"], dtype=np.float32),
                            strict=True))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return {}


async def save_vectors(path: Path, passages: Sequence[Passage], embedder: Embedder, *, keep: bool = True) -> None:
    """Embed the chunks and keep their vectors beside the index (written atomically), so that a start reads
    them instead of embedding them again (~1 s of CPU with the local model, at every start). `keep`: the
    chunks already in the file are read, not embedded again (a build after an import changes few)."""
    texts = [p.indexed for p in passages]
    vectors = await _passage_vectors(texts, embedder, path if keep else None) if texts else np.zeros((0, 0), dtype=np.float32)

    def write() -> None:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, suffix=".tmp.npz", delete=False) as out:
            np.savez(out, model=np.array(embedder.name), keys=np.array([_key(t) for t in texts]), vectors=vectors)
        os.chmod(out.name, 0o600)
        os.replace(out.name, path)

    await asyncio.to_thread(write)


async def _passage_vectors(texts: list[str], embedder: Embedder, stored: Path | None = None) -> np.ndarray:
    try:
        known = _REMEMBERED.setdefault(embedder, {})
    except TypeError:   # an embedder that cannot be referred to weakly: embedded every time
        return await embedder.embed_passages(texts)
    if stored is not None and any(text not in known for text in texts):
        kept = await asyncio.to_thread(read_stored_vectors, stored, embedder.name)
        known.update((text, kept[_key(text)]) for text in texts if _key(text) in kept)
    missing = [text for text in dict.fromkeys(texts) if text not in known]
    if missing:
        for text, vector in zip(missing, await embedder.embed_passages(missing), strict=True):
            known[text] = vector
    return np.stack([known[text] for text in texts])


@dataclass(frozen=True)
class Passage:
    passage_id: str       # "returns#1"
    title: str
    text: str

    @property
    def indexed(self) -> str:
        return f"{self.title}\n{self.text}"


_LONG_NUMBER = re.compile(r"(?<![\d.])\d{3,}(?![\d.])")   # a figure that tells rows apart, not 7 (天) or 30


def _words(text: str) -> list[str]:
    """jieba words, and the two-character pieces of Chinese runs ("能开发票" reads 开发+票 to jieba; 发票 is
    still found as a piece)."""
    words = [w for w in plain_words(text) if w not in _STOP and not w.isdigit()]
    words += _LONG_NUMBER.findall(text)   # 255 (mm) finds the size table's row, in any language around it
    for run in _HAN.findall(text):
        words += [run[i:i + 2] for i in range(len(run) - 1) if run[i:i + 2] not in _STOP]
    return words


class PassageSearch:
    def __init__(self, passages: Sequence[Passage], embedder: Embedder | None = None,
                 vectors: np.ndarray | None = None):
        self.passages = list(passages)
        self.embedder = embedder if vectors is not None else None
        self.vectors = vectors
        self._queries = QueryVectorCache(embedder) if self.embedder is not None else None   # repeated questions
        bags = [Counter(_words(p.indexed)) for p in self.passages]
        self._lengths = np.array([sum(b.values()) for b in bags], dtype=np.float32)
        self._average = float(self._lengths.mean()) if bags else 1.0
        self._bags = bags
        frequency = Counter(w for bag in bags for w in bag)
        n = len(bags)
        self._idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in frequency.items()}

    @classmethod
    async def build(cls, passages: Sequence[Passage], embedder: Embedder | None,
                    stored: Path | None = None) -> PassageSearch:
        """Embed the chunks (a few dozen: a second with the local model, once per embedder and text in a
        process; read from `stored` when it holds them) and build the lexical side."""
        vectors = None
        if embedder is not None and passages:
            vectors = await _passage_vectors([p.indexed for p in passages], embedder, stored)
        return await asyncio.to_thread(cls, passages, embedder, vectors)

    def bm25(self, query: str) -> np.ndarray:
        scores = np.zeros(len(self.passages), dtype=np.float32)
        for word in set(_words(query)):
            idf = self._idf.get(word)
            if idf is None:
                continue
            for i, bag in enumerate(self._bags):
                tf = bag.get(word, 0)
                if tf:
                    norm = K1 * (1 - B + B * self._lengths[i] / self._average)
                    scores[i] += idf * tf * (K1 + 1) / (tf + norm)
        return scores

    async def search(self, query: str, top_k: int = 3) -> list[tuple[str, float]]:
        """Chunk ids, best first: those sharing a word with the query, or (dense) very close to it."""
        if not self.passages or not (query or "").strip():
            return []
        lexical = self.bm25(query)
        fused = np.zeros(len(self.passages), dtype=np.float32)
        eligible = lexical > 0
        for rank, i in enumerate(np.argsort(-lexical)):
            if lexical[i] > 0:
                fused[i] += 1 / (RRF_K + rank + 1)
        q, tie = None, lexical
        if self.vectors is not None:
            try:
                q = await self._queries.vector(query)
            except EmbeddingError as exc:   # a remote embedder down (its circuit open): BM25 alone
                log.warning("policy search by words only for this query (%s)", exc)
        if q is not None:
            cosine = self.vectors @ q
            for rank, i in enumerate(np.argsort(-cosine)):
                fused[i] += 1 / (RRF_K + rank + 1)
            eligible |= cosine >= MIN_COSINE
            # the words' share of the best BM25 and the meaning's z-score over the chunks, added
            tie = lexical / max(float(lexical.max()), 1e-6) + (cosine - cosine.mean()) / (float(cosine.std()) or 1.0)
        # equal fused ranks (the words put one chunk first, the meaning the other): by how far each is ahead —
        # a paraphrase (抬头写错了 for 填错的) shares words with the overview nearly as much as with its own chunk,
        # while 七天无理由退货的话寄回去的运费 shares many more with the freight chunk than the meaning tells apart
        order = [int(i) for i in np.lexsort((-tie, -fused)) if eligible[i]]
        return [(self.passages[i].passage_id, float(fused[i])) for i in order[:top_k]]
