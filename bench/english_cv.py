"""Issue 24, English queries: 5-fold cross-validation on the train split of both shipped catalogs, without
and with the English evidence (retrieval/glosses.py; its weight fitted after the rest, training.fit_english),
per kind and per seed. Also checks that no train query with a Chinese character gets the evidence (it is ranked as before).

    python bench/english_cv.py [--seeds 7 11] [--mode hybrid]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.settings import load_settings  # noqa: E402
from agent.startup import embedder_from  # noqa: E402
from db.records import demo_catalog, read_catalog_json  # noqa: E402
from retrieval.evaluation import SHIPPED, load_queries  # noqa: E402
from retrieval.glosses import ENGLISH_FEATURES  # noqa: E402
from retrieval.text import has_han  # noqa: E402
from retrieval.training import cross_validate, train_rows  # noqa: E402


def table(before: dict, after: dict) -> str:
    lines = [f"{'catalog':8s} {'kind':12s} {'before':>7s} {'after':>7s}"]
    for catalog in before:
        for kind in before[catalog]:
            b, a = before[catalog][kind], after[catalog].get(kind, float("nan"))
            mark = "" if b == a else ("  +" if a > b else "  -")
            lines.append(f"{catalog:8s} {kind:12s} {b:7.3f} {a:7.3f}{mark}")
    return "\n".join(lines)


async def shipped_train_rows(mode: str) -> list:
    """The shipped catalogs' train queries with their ranking features (`train_rows`), in `mode`."""
    settings = load_settings()
    catalogs = [(name, read_catalog_json(path) if path else demo_catalog(settings.today), load_queries(queries))
                for name, (path, queries) in SHIPPED.items()]
    return await train_rows(catalogs, embedder_from(settings), mode)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 11])
    parser.add_argument("--mode", default="hybrid", choices=("hybrid", "lexical"))
    parser.add_argument("--variants", action="store_true", help="also each column of the evidence alone")
    args = parser.parse_args()
    rows = await shipped_train_rows(args.mode)
    latin = sum(ex.signals.english is not None for _, _, ex in rows)
    print(f"{len(rows)} train queries, {latin} without a Chinese character (read with the English evidence)")
    assert all(ex.signals.english is None for _, q, ex in rows if has_han(q.query))
    k = len(ENGLISH_FEATURES)
    variants = {"all": [True] * k} | {f"only {f}": [j == i for j in range(k)] for i, f in enumerate(ENGLISH_FEATURES)}
    if not args.variants:
        variants = {"all": variants["all"]}
    for seed in args.seeds:
        before = cross_validate(rows, seed=seed, english=[False] * k)
        for label, use in variants.items():
            after = cross_validate(rows, seed=seed, english=use)
            print(f"\n5-fold CV on train, seed {seed}, {args.mode}, English evidence {label}: Recall@1 per kind "
                  "(absent: share answered with nothing)")
            print(table(before, after))


if __name__ == "__main__":
    asyncio.run(main())
