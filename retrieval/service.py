"""Builds the pieces of retrieval from configuration: the embedder, the index, the search."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import aiosqlite

from db.catalog import catalog_words, products_for_retrieval
from db.knowledge import all_documents
from retrieval import ann
from retrieval.documents import RetrievalDoc, doc_from_product
from retrieval.embedders import Circuit, Embedder, LocalE5Embedder, OpenAIEmbedder
from retrieval.index import IndexProblem, VectorIndex
from retrieval.passages import Passage, PassageSearch
from retrieval.search import ProductSearch

log = logging.getLogger(__name__)


def make_embedder(model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                  dimensions: int | None = None, timeout: float = 20.0, max_retries: int = 2,
                  connect_timeout: float = 3.0, circuit: Circuit | None = None, concurrency: int = 4) -> Embedder:
    """The remote embedder when a model is configured (behind `circuit`, when given; at most `concurrency`
    requests in flight), else the bundled local one."""
    if not model:
        return LocalE5Embedder()
    from openai import AsyncOpenAI, Timeout

    client = AsyncOpenAI(api_key=api_key or "unused", base_url=base_url, max_retries=max_retries,
                         timeout=Timeout(timeout, connect=min(connect_timeout, timeout)))
    return OpenAIEmbedder(client, model, dimensions, circuit=circuit, concurrency=concurrency)


async def policy_passages(conn: aiosqlite.Connection) -> list[Passage]:
    return [Passage(d.doc_id, d.title, d.content) for d in await all_documents(conn)]


async def load_passages(conn: aiosqlite.Connection, embedder: Embedder | None,
                        stored: Path | None = None) -> PassageSearch:
    """The search over store-policy chunks: hybrid with an embedder (their vectors read from `stored`, the
    file kept beside the index, when it holds them), BM25 alone without one."""
    return await PassageSearch.build(await policy_passages(conn), embedder, stored)


async def catalog_docs(conn: aiosqlite.Connection) -> list[RetrievalDoc]:
    """Every product's retrieval document, with its category (what kind of thing it is) beside it."""
    category = {pid: cat for pid, _, _, cat in await catalog_words(conn)}
    return [doc_from_product({**row, "category": category.get(row["product_id"], "")})
            for row in await products_for_retrieval(conn)]


async def load_search(conn: aiosqlite.Connection, index_path: Path, embedder: Embedder, *,
                      lexical: bool = False) -> ProductSearch:
    """The search over the catalog: hybrid with the index; lexical only when asked for (`lexical`), or
    (with a warning) without an index.

    A corrupt index or one built with another model raises IndexProblem with the command that fixes it.
    """
    docs = await catalog_docs(conn)
    index = None
    if lexical:
        log.info("SEARCH_MODE=lexical: lexical search only, no embeddings")
        return await asyncio.to_thread(ProductSearch, docs, None, None)
    try:
        index = await asyncio.to_thread(open_index, index_path, embedder, len(docs))
    except FileNotFoundError:
        log.warning("no search index at %s: lexical search only; run `python bot.py build-index`", index_path)
    # over an ANN generation the search follows the index: a newer generation is switched in with the catalog
    # read again from this connection
    return await asyncio.to_thread(ProductSearch, docs, embedder if index else None, index,
                                   catalog=lambda: catalog_docs(conn))


def open_index(index_path: Path, embedder: Embedder, size: int) -> VectorIndex | ann.Generation:
    """The index a search over `size` products reads: from ann.ANN_THRESHOLD products on, the current ANN
    generation (memory-mapped, shared by every worker on the host); below it, the exact float32 index."""
    generation = ann.current_generation(index_path) if size >= ann.ANN_THRESHOLD else None
    if generation is not None:
        opened = ann.Generation.open(index_path, generation)
        if opened.model != embedder.name or (embedder.dimensions and opened.dimensions != embedder.dimensions):
            raise IndexProblem(f"the search index {index_path} was built with {opened.model}; "
                               "run `python bot.py build-index --rebuild`")
        return opened
    return VectorIndex.load(index_path, embedder.name, embedder.dimensions or None)
