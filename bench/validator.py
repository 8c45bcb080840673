"""Validator benchmark: per lie family the share blocked and per true role the share passed, for the
grounding-v2 validator, the validator before it (kind-only checks) and the shop's original one, all on
the same generated red-team corpus in the same run; then validations per second with the ledger
rebuilt per answer, and the p99 time per answer.

    python bench/validator.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.tools import payload  # noqa: E402
from bench.original_validator import numbers_seen, original_validate  # noqa: E402
from bench.previous_validator import ledger_from, previous_validate  # noqa: E402
from db.build import write_catalog  # noqa: E402
from db.connection import open_readonly  # noqa: E402
from db.records import demo_catalog  # noqa: E402
from guardrails.validator import validate  # noqa: E402
from tests.fakes.demo import DEMO_DAY  # noqa: E402
from tests.fakes.redteam import build_corpus  # noqa: E402


def ours(case, _records):
    return validate(case.question, case.answer, case.citations, case.ledger()).ok


def previous(case, records):
    return previous_validate(case.answer, list(case.citations), ledger_from(records))


def original(case, records):
    verified = {r["product_id"] for r in records if r["evidence_id"].startswith("product:")}
    cited = [c.split(":", 1)[1] for c in case.citations if c.startswith("product:")]
    return original_validate(case.answer, cited, verified, numbers_seen(records))


CHECKS = {"grounding v2": ours, "previous (kind only)": previous, "original design": original}


def records_of(case):
    """The verified records of a case as the model sees them (JSON-ready dicts with evidence ids)."""
    return [payload(e.record) | {"evidence_id": e.evidence_id, "status": "verified"}
            for e in case.ledger().entries.values()]


def timing(check, corpus, records, rounds=3):
    per_second, per_answer = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for case, rec in zip(corpus, records, strict=True):
            t = time.perf_counter()
            check(case, rec)
            per_answer.append(time.perf_counter() - t)
        per_second.append(len(corpus) / (time.perf_counter() - start))
    per_answer.sort()
    return statistics.median(per_second), per_answer[int(len(per_answer) * 0.99)] * 1000


async def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "shop.db"
        write_catalog(path, demo_catalog(DEMO_DAY), source="demo")
        conn = await open_readonly(path)
        try:
            corpus = await build_corpus(conn)
        finally:
            await conn.close()
    records = [records_of(c) for c in corpus]
    lies, truths = sum(c.lie for c in corpus), sum(not c.lie for c in corpus)
    print(f"corpus: {len(corpus)} answers from the demo catalog ({lies} lies, {truths} true renderings)\n")
    right: dict[str, dict[tuple[bool, str], list[bool]]] = {}
    for label, check in CHECKS.items():
        table = defaultdict(list)
        for case, rec in zip(corpus, records, strict=True):
            table[(case.lie, case.family)].append(check(case, rec) != case.lie)
        right[label] = table
    header = f"{'':38s}" + "".join(f"{label:>22s}" for label in CHECKS)
    for lie, title in ((True, "lies blocked, by family"), (False, "true renderings passed, by role")):
        print(title)
        print(header)
        keys = sorted(k for k in right["grounding v2"] if k[0] == lie)
        for key in keys + [(lie, "all")]:
            n = sum(len(v) for k, v in right["grounding v2"].items() if k[0] == lie) if key[1] == "all" else \
                len(right["grounding v2"][key])
            cells = []
            for label in CHECKS:
                values = ([x for k, v in right[label].items() if k[0] == lie for x in v] if key[1] == "all"
                          else right[label][key])
                cells.append(f"{sum(values) / len(values):21.1%} ")
            print(f"  {key[1] + f' (n={n})':36s}" + "".join(cells))
        print()
    for label, check in CHECKS.items():
        rate, p99 = timing(check, corpus, records)
        print(f"{label:22s} {rate:8.0f} validations/s (median of 3 rounds, ledger rebuilt per answer), "
              f"p99 {p99:.2f} ms per answer")


if __name__ == "__main__":
    asyncio.run(main())
