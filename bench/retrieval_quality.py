"""Retrieval quality, side by side in one run: kefu-bot's hybrid search, its dense and lexical signals
alone, and the shop's original retriever, on the shipped evaluation set (or --catalog/--queries).

    python bench/retrieval_quality.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.original_retriever import OriginalRetriever, write_json_index  # noqa: E402
from db.build import write_catalog  # noqa: E402
from db.connection import open_readonly  # noqa: E402
from db.records import demo_catalog, read_catalog_json  # noqa: E402
from retrieval.embedders import LocalE5Embedder  # noqa: E402
from retrieval.evaluation import evaluate, format_report, load_queries  # noqa: E402
from retrieval.index import VectorIndex, build_index  # noqa: E402
from retrieval.search import ProductSearch  # noqa: E402
from retrieval.service import catalog_docs  # noqa: E402


async def main(args) -> None:
    catalog = read_catalog_json(Path(args.catalog)) if args.catalog else demo_catalog()
    queries = load_queries(Path(args.queries) if args.queries else ROOT / "retrieval/evalsets/demo_queries.jsonl")
    embedder = LocalE5Embedder()
    with tempfile.TemporaryDirectory() as tmp:
        db_path, index_path, json_index = Path(tmp) / "c.db", Path(tmp) / "c.index", Path(tmp) / "c.json"
        write_catalog(db_path, catalog, source="bench")
        conn = await open_readonly(db_path)
        docs = await catalog_docs(conn)
        await conn.close()
        await build_index(index_path, docs, embedder, progress=False)
        index = VectorIndex.load(index_path, embedder.name)
        write_json_index(json_index, index.ids, index.vectors[:, 0])   # the original: one document vector
        search = ProductSearch(docs, embedder, index)

        async def hybrid(q):
            return [c.product_id for c in await search.search(q, 10)]

        async def dense_only(q):   # the mean of the views, no confidence rule
            s = await search.signals(q)
            return [docs[i].product_id for i in np.argsort(-s.dense_z)[:10]]

        async def lexical_only(q):
            s = await search.signals(q)
            fused = search.fuse(replace(s, dense_z=None, view_z=(), best_document_z=None, synonyms=None))[0]
            return [docs[i].product_id for i in np.argsort(-fused, kind="stable")[:10] if fused[i] > 0]

        original = OriginalRetriever(db_path, json_index, lambda q: embedder.encode([q], True)[0])

        async def original_search(q):
            return [pid for pid, _ in original.search(q, 10)]

        for title, fn in (("kefu-bot hybrid (with confidence rule)", hybrid), ("dense signal alone", dense_only),
                          ("lexical signals alone", lexical_only), ("original design retriever", original_search)):
            print(format_report(await evaluate(fn, queries), title))
            print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--catalog")
    parser.add_argument("--queries")
    asyncio.run(main(parser.parse_args()))
