"""The persisted vector index: one .npz file with, per product, its vector and the hash of its
retrieval document, plus the model name and dimensions. Built incrementally, saved atomically after
every chunk, so an interrupted build resumes without losing finished work."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
import zipfile
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval import ann
from retrieval.ann import PublishReport
from retrieval.documents import PREVIOUS_RECIPE, RECIPE, VIEWS, RetrievalDoc
from retrieval.embedders import Embedder, settled

FORMAT_VERSION = 2
FIX = "run `python bot.py build-index --rebuild`"


class IndexProblem(Exception):
    """The index cannot be used as it is; the message says why and which command fixes it."""


@dataclass
class VectorIndex:
    model: str
    dimensions: int
    ids: list[str]
    hashes: list[str]
    vectors: np.ndarray
    # each product's bare name as a query would be embedded (the query role): how close a customer's words
    # are to what the product is called; a row of zeros where not embedded yet (an index of PREVIOUS_RECIPE)
    names: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.names is None:
            self.names = np.zeros((len(self.ids), self.dimensions), dtype=np.float32)

    @property
    def named(self) -> np.ndarray:
        """Which rows have their name vector."""
        return np.abs(self.names).sum(axis=1) > 0 if len(self.ids) else np.zeros(0, dtype=bool)

    @classmethod
    def empty(cls, model: str, dimensions: int) -> VectorIndex:
        return cls(model, dimensions, [], [], np.zeros((0, VIEWS, dimensions), dtype=np.float32))

    @classmethod
    def load(cls, path: Path, model: str, dimensions: int | None = None) -> VectorIndex:
        """Load and check the index; a corrupt file or another model is an IndexProblem."""
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                ids = [str(x) for x in data["ids"]]
                hashes = [str(x) for x in data["hashes"]]
                vectors = np.asarray(data["vectors"], dtype=np.float32)
                names = np.asarray(data["names"], dtype=np.float32) if "names" in data else None
        except FileNotFoundError:
            raise
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
            raise IndexProblem(f"the search index {path} is unreadable ({type(exc).__name__}); {FIX}") from None
        # an index of the previous recipe is read as it is: build_index adds the name vectors it lacks
        if meta.get("format_version") != FORMAT_VERSION or meta.get("recipe") not in (RECIPE, PREVIOUS_RECIPE):
            raise IndexProblem(f"the search index {path} was made by another version of kefu-bot; {FIX}")
        if not len(ids) == len(hashes) == len(vectors):
            raise IndexProblem(f"the search index {path} is inconsistent; {FIX}")
        if meta.get("model") != model or (dimensions and meta.get("dimensions") != dimensions):
            raise IndexProblem(
                f"the search index {path} was built with {meta.get('model')} ({meta.get('dimensions')} dimensions) "
                f"but the bot is configured for {model} ({dimensions or 'any'} dimensions); {FIX}")
        if vectors.ndim != 3 or (len(ids) and vectors.shape[1:] != (VIEWS, meta["dimensions"])):
            raise IndexProblem(f"the search index {path} has vectors of the wrong shape; {FIX}")
        if names is not None and names.shape != (len(ids), meta["dimensions"]):
            raise IndexProblem(f"the search index {path} has name vectors of the wrong shape; {FIX}")
        return cls(meta["model"], int(meta["dimensions"]), ids, hashes, vectors, names)

    def save(self, path: Path) -> None:
        """Write to a temporary file beside `path`, then atomically replace it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, ids=np.array(self.ids, dtype=str), hashes=np.array(self.hashes, dtype=str),
                         vectors=self.vectors.astype(np.float32), names=self.names.astype(np.float32),
                         meta=np.array(json.dumps({"format_version": FORMAT_VERSION, "recipe": RECIPE,
                                                   "model": self.model, "dimensions": self.dimensions})))
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)

    def vectors_for(self, product_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row positions in `product_ids`, their (views × dimensions) vectors, their name vectors) for the
        ids this index holds."""
        where = {pid: i for i, pid in enumerate(self.ids)}
        rows = [(pos, where[pid]) for pos, pid in enumerate(product_ids) if pid in where]
        if not rows:
            return (np.zeros(0, dtype=np.int64), np.zeros((0, VIEWS, self.dimensions), dtype=np.float32),
                    np.zeros((0, self.dimensions), dtype=np.float32))
        positions, idx = zip(*rows, strict=True)
        return np.asarray(positions), self.vectors[list(idx)], self.names[list(idx)]


@dataclass
class BuildReport:
    embedded: int
    kept: int
    removed: int
    seconds: float
    published: PublishReport | None = None   # the ANN generation written (a large catalog), if any


CHECKPOINT_SECONDS = 30.0
CHUNKS_IN_FLIGHT = 3   # chunks embedded at once after the first, by default (_embed_chunks)


async def _embed_distinct(embed, texts: list[str]) -> np.ndarray:
    """`embed(texts)`, each distinct text embedded once (variants of a product share a name or a usage)."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) == len(texts):
        return await embed(texts)
    vectors = await embed(distinct)
    at = {text: i for i, text in enumerate(distinct)}
    return vectors[[at[text] for text in texts]]


async def _embed_chunk(batch: list[RetrievalDoc], embedder: Embedder) -> tuple[np.ndarray, np.ndarray]:
    """(views, name vectors) of one chunk of products: the two embedder calls at once."""
    views, names = await settled(
        _embed_distinct(embedder.embed_passages, [text for d in batch for text in d.views]),
        _embed_distinct(embedder.embed_queries, [d.base_name for d in batch]))
    return views.reshape(len(batch), VIEWS, -1), names


Pending = deque[tuple[list[RetrievalDoc], asyncio.Future]]


async def _keep_next(pending: Pending, keep) -> None:
    """Hand the oldest chunk in flight to `keep` when it is embedded. If it failed, the chunks sent beside it
    finish and those that succeed are kept (a rerun resumes after them); then its error is raised."""
    batch, task = pending.popleft()
    try:
        vectors = await task
    except Exception:
        results = await asyncio.gather(*(t for _, t in pending), return_exceptions=True)
        for (later, _), result in zip(pending, results, strict=True):
            if not isinstance(result, BaseException):
                await keep(later, *result)
        pending.clear()
        raise
    await keep(batch, *vectors)


async def _embed_chunks(chunks: list[list[RetrievalDoc]], embedder: Embedder, keep, in_flight: int) -> None:
    """Embed `chunks` and hand each to `keep(batch, views, names)`, in order, as it is finished.

    The first chunk goes alone (an endpoint that is down costs one chunk's requests); after it up to `in_flight`
    chunks are embedded at once, so a remote endpoint's latency is waited for once per window, not once per chunk
    (the embedder bounds the requests in flight; the local model's one thread takes them in turn)."""
    pending: Pending = deque()
    try:
        for i, batch in enumerate(chunks):
            pending.append((batch, asyncio.ensure_future(_embed_chunk(batch, embedder))))
            while pending and (i == 0 or i == len(chunks) - 1 or len(pending) >= in_flight):
                await _keep_next(pending, keep)
    finally:   # cancelled (Ctrl-C), or `keep` failed: nothing is left running
        for _, task in pending:
            task.cancel()
        await asyncio.gather(*(task for _, task in pending), return_exceptions=True)


async def build_index(path: Path, docs: Sequence[RetrievalDoc], embedder: Embedder, *, rebuild: bool = False,
                      chunk: int = 128, progress: bool = True, ann_threshold: int | None = None,
                      chunks_in_flight: int = CHUNKS_IN_FLIGHT) -> BuildReport:
    """Embed only new or changed documents and drop removed ones. Finished work is saved every
    CHECKPOINT_SECONDS and whenever the build stops early (Ctrl-C, an embedder error), so a rerun
    resumes where it left off; the whole file is not rewritten after every chunk.

    Chunks of `chunk` products are embedded `chunks_in_flight` at once after the first (_embed_chunks).
    A catalog of `ann_threshold` (default ann.ANN_THRESHOLD) products or more also gets a new ANN generation
    (retrieval/ann.py) when the current one does not hold exactly these products: its graph is updated by
    product key, not rebuilt."""
    started = time.perf_counter()
    exists = await asyncio.to_thread(path.exists)
    index = None
    if exists and not rebuild:
        index = await asyncio.to_thread(VectorIndex.load, path, embedder.name, embedder.dimensions or None)
    if index is None:
        index = VectorIndex.empty(embedder.name, embedder.dimensions)

    wanted = {d.product_id: d for d in docs}
    keep = [i for i, (pid, h) in enumerate(zip(index.ids, index.hashes, strict=True))
            if pid in wanted and wanted[pid].content_hash == h]
    removed = len(index.ids) - len(keep)
    ids = [index.ids[i] for i in keep]
    hashes = [index.hashes[i] for i in keep]
    blocks = [index.vectors[keep]] if keep else []
    name_blocks = [index.names[keep]] if keep else []
    done = set(ids)
    todo = [d for d in docs if d.product_id not in done]
    unsaved = bool(removed or not exists or rebuild)
    unnamed = [i for i, named in enumerate(index.named[keep]) if not named] if keep else []
    if unnamed:   # an index of the previous recipe: only the name vectors are embedded
        names = name_blocks[0]
        for start in range(0, len(unnamed), chunk):
            rows = unnamed[start:start + chunk]
            names[rows] = await embedder.embed_queries([wanted[ids[i]].base_name for i in rows])
        unsaved = True

    saved: list[VectorIndex] = []

    async def save() -> None:
        nonlocal unsaved
        dims = embedder.dimensions or (blocks[-1].shape[-1] if blocks else 0)
        vectors = np.vstack(blocks) if blocks else np.zeros((0, VIEWS, dims), dtype=np.float32)
        names = np.vstack(name_blocks) if name_blocks else np.zeros((0, dims), dtype=np.float32)
        saved[:] = [VectorIndex(embedder.name, dims, list(ids), list(hashes), vectors, names)]
        await asyncio.to_thread(saved[0].save, path)
        unsaved = False

    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="product", desc="embedding", file=sys.stderr, mininterval=0.5)
    last_save = time.monotonic()

    async def keep_chunk(batch: list[RetrievalDoc], views: np.ndarray, names: np.ndarray) -> None:
        nonlocal unsaved, last_save
        blocks.append(views)
        name_blocks.append(names)
        ids.extend(d.product_id for d in batch)
        hashes.extend(d.content_hash for d in batch)
        unsaved = True
        if time.monotonic() - last_save >= CHECKPOINT_SECONDS:
            await save()
            last_save = time.monotonic()
        if bar is not None:
            bar.update(len(batch))

    try:
        await _embed_chunks([todo[start:start + chunk] for start in range(0, len(todo), chunk)], embedder,
                            keep_chunk, chunks_in_flight)
    finally:
        if bar is not None:
            bar.close()
        if unsaved:
            await save()
    published = None
    threshold = ann.ANN_THRESHOLD if ann_threshold is None else ann_threshold
    if len(docs) >= threshold and not await asyncio.to_thread(ann.is_current, path, ids, hashes):
        final = saved[0] if saved else await asyncio.to_thread(VectorIndex.load, path, embedder.name)
        published = await asyncio.to_thread(ann.publish, path, final.ids, final.hashes, final.vectors, final.names,
                                            final.model)
    return BuildReport(len(todo), len(keep), removed, time.perf_counter() - started, published)
