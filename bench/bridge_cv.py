"""Issue 24, the Chinese synonym bridge (retrieval/bridge.py): 5-fold cross-validation on the train split of both
shipped catalogs without the bridge, with its ranker weights only, and with its gate weights too (all fitted after
the rest, training.fit_bridge), per kind and per seed. Also checks that only queries with a Chinese character
get the bridge, and lists the train queries it reads.

    python bench/bridge_cv.py [--seeds 7 11] [--mode hybrid] [--absent-rejected 0.85]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.english_cv import shipped_train_rows, table  # noqa: E402
from retrieval.text import has_han  # noqa: E402
from retrieval.training import cross_validate  # noqa: E402


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 11])
    parser.add_argument("--mode", default="hybrid", choices=("hybrid", "lexical"))
    parser.add_argument("--absent-rejected", type=float, default=0.85)
    parser.add_argument("--list", action="store_true", help="list the train queries the bridge reads")
    args = parser.parse_args()
    rows = await shipped_train_rows(args.mode)
    assert all(ex.signals.bridge is None for _, q, ex in rows if not has_han(q.query))
    read = [(c, q) for c, q, ex in rows if ex.signals.bridge is not None]
    print(f"{len(rows)} train queries, {len(read)} read by the bridge: "
          + ", ".join(f"{c} {k} {sum(1 for cc, q in read if cc == c and q.kind == k)}"
                      for c in ("demo", "outdoor") for k in ("synonym", "absent")))
    if args.list:
        for c, q in read:
            print(f"  {c} {q.kind}: {q.query}")
    for seed in args.seeds:
        before = cross_validate(rows, seed=seed, absent_rejected=args.absent_rejected, bridge="none")
        for variant in ("rank", "all"):
            after = cross_validate(rows, seed=seed, absent_rejected=args.absent_rejected, bridge=variant)
            print(f"\n5-fold CV on train, seed {seed}, {args.mode}, {args.absent_rejected:.0%} absent rejected, "
                  f"bridge {variant}: Recall@1 per kind (absent: share answered with nothing)")
            print(table(before, after))


if __name__ == "__main__":
    asyncio.run(main())
