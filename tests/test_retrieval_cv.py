"""Cross-validation of the learned fusion on the train split (retrieval/training.py): a fold is scored by
a ranker and gate fitted without it, through the same serving rule as a search, and never on `test`."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.evaluation import EvalQuery
from retrieval.search import Signals
from retrieval.training import Example, cross_validate, fit, served

PRODUCTS = 6


def _example(relevant: int | None, noise: float, rng: np.random.Generator) -> Example:
    """A query naming product `relevant` (its name and BM25 signals stand out), or naming nothing sold
    (None: every signal is low noise)."""
    name = rng.uniform(0, noise, PRODUCTS).astype(np.float32)
    bm25 = rng.uniform(0, noise, PRODUCTS).astype(np.float32)
    flags = np.zeros(PRODUCTS, dtype=np.float32)
    if relevant is not None:
        name[relevant], bm25[relevant], flags[relevant] = 1.0, 1.0, 1.0
    s = Signals(name=name, brand=np.zeros(PRODUCTS, np.float32), bm25=bm25, bm25_max=float(bm25.max()) * 5,
                coverage=1.0 if relevant is not None else 0.2, latin=False, words=1, token_cover=flags.copy(),
                head=flags.copy(), category=flags.copy())
    mask = np.zeros(PRODUCTS, dtype=bool)
    if relevant is not None:
        mask[relevant] = True
    return Example(s, s.features(), mask)


def _rows(noise: float = 0.3, n: int = 60) -> list[tuple[str, EvalQuery, Example]]:
    rng = np.random.default_rng(5)
    rows = []
    for k in range(n):
        relevant = None if k % 4 == 0 else k % PRODUCTS
        query = EvalQuery(f"q{k}", () if relevant is None else (str(relevant),),
                          "absent" if relevant is None else "name", "train")
        rows.append(("shop", query, _example(relevant, noise, rng)))
    return rows


def test_cross_validation_scores_held_out_folds_per_kind():
    report = cross_validate(_rows(n=40), folds=3, absent_rejected=0.9)
    assert set(report) == {"shop"}
    assert report["shop"]["name"] == 1.0 and report["shop"]["overall"] == 1.0
    assert report["shop"]["absent"] >= 0.8


def test_cross_validation_sees_a_signal_that_does_not_separate():
    # the relevant product no better than noise: held-out Recall@1 must fall well below 1
    rows = _rows(noise=1.0, n=36)
    for _, _, ex in rows:
        ex.features[:] = np.random.default_rng(1).uniform(0, 1, ex.features.shape)
    assert cross_validate(rows, folds=3)["shop"]["overall"] < 0.6


def test_served_returns_nothing_when_the_gate_refuses():
    rows = _rows(n=32)
    ranker = fit([r[2] for r in rows], "test", 0.9)
    absent = [r[2] for r in rows if not r[2].relevant.any()]
    assert sum(not served(ranker, ex) for ex in absent) >= 0.8 * len(absent)
    named = [r[2] for r in rows if r[2].relevant.any()]
    assert all(served(ranker, ex) and ex.relevant[served(ranker, ex)[0]] for ex in named)


def test_cross_validation_refuses_the_test_split():
    rows = _rows(n=8)
    name, query, ex = rows[1]
    rows[1] = (name, EvalQuery(query.query, query.relevant, query.kind, "test"), ex)
    with pytest.raises(ValueError, match="train split only"):
        cross_validate(rows)
