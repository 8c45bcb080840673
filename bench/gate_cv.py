"""Issue 24, the gate (does the shop sell what was asked?): would a non-linear model of the same evidence let more
of the well-ranked queries through at the absent rate the issue asks (95%)? 5-fold cross-validation on the train
split of both shipped catalogs: each fold's ranker is fitted as shipped (training.fit, fit_english, fit_bridge) on
the other folds; the gate's features of every query are read at that ranker's best product, and three gates are
fitted on the other folds' features — the shipped logistic gate, a plain logistic regression and gradient-boosted
trees (scikit-learn, an optional dependency: `pip install -e '.[bench]'`). Each gate's threshold is set to reject
85 / 90 / 95% of the held-out absent queries (the same rejection for every gate, so the rows compare curves), and
the table gives the share of held-out queries ranked right at 1 that pass, all and synonyms alone.

    python bench/gate_cv.py [--seeds 7 11]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.english_cv import shipped_train_rows  # noqa: E402
from retrieval.training import fit, fit_bridge, fit_english  # noqa: E402

REJECTED = (0.85, 0.90, 0.95)


def _held_out(rows: list, seed: int, folds: int = 5) -> list[dict]:
    """Per train query, under the ranker of the folds it is not in: its gate features, the shipped gate's
    probability, and the logistic and boosted gates' probabilities fitted on the other folds."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    fold = np.random.default_rng(seed).integers(0, folds, len(rows))
    out = []
    for k in range(folds):
        fitted_on = [ex for (_, _, ex), f in zip(rows, fold, strict=True) if f != k]
        ranker = fit_bridge(fit_english(fit(fitted_on, "cross-validation"), fitted_on), fitted_on)
        read = []
        for (catalog, query, ex), f in zip(rows, fold, strict=True):
            bridge = ex.signals.bridge
            scores, gate_scores, best, runner_up = ranker.gate_view(ex.features, ex.signals.english, bridge)
            gate = ex.signals.gate_features(gate_scores, best, runner_up)
            at_best = bridge[best] if bridge is not None else None
            x = np.concatenate([gate, at_best if at_best is not None else np.zeros(len(ranker.bridge_weights)),
                                [float(bridge is not None)]])
            read.append(dict(held=f == k, catalog=catalog, kind=query.kind, x=x, absent=not ex.relevant.any(),
                             shipped=ranker.gate(gate, at_best), right=bool(ex.relevant[int(np.argmax(scores))])))
        train = [r for r in read if not r["held"]]
        x, y = np.array([r["x"] for r in train]), np.array([not r["absent"] for r in train])
        held = [r for r in read if r["held"]]
        xh = np.array([r["x"] for r in held])
        logistic = LogisticRegression(max_iter=5000, class_weight="balanced").fit(x, y).predict_proba(xh)[:, 1]
        boosted = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15,
                                                 min_samples_leaf=10, l2_regularization=1.0,
                                                 random_state=0).fit(x, y).predict_proba(xh)[:, 1]
        for r, p_logistic, p_boosted in zip(held, logistic, boosted, strict=True):
            out.append(r | {"logistic": float(p_logistic), "boosted": float(p_boosted)})
    return out


def _table(held: list[dict]) -> str:
    lines = [f"{'gate':9s} {'catalog':8s} " + " ".join(f"{'absent ' + format(r, '.0%'):>19s}" for r in REJECTED),
             f"{'':18s}" + " ".join(f"{'pass  synonyms':>19s}" for _ in REJECTED)]
    for gate in ("shipped", "logistic", "boosted"):
        for catalog in ("demo", "outdoor", "both"):
            rows = [r for r in held if catalog == "both" or r["catalog"] == catalog]
            p = np.array([r[gate] for r in rows])
            absent = np.array([r["absent"] for r in rows])
            right = np.array([r["right"] for r in rows]) & ~absent
            synonym = right & np.array([r["kind"] == "synonym" for r in rows])
            cells = []
            for rejected in REJECTED:
                threshold = np.quantile(p[absent], rejected)
                cells.append(f"{np.mean(p[right] > threshold):9.3f} {np.mean(p[synonym] > threshold):9.3f}")
            lines.append(f"{gate:9s} {catalog:8s} " + " ".join(cells))
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[7, 11])
    args = parser.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit("bench/gate_cv.py needs scikit-learn: pip install -e '.[bench]'")
    rows = await shipped_train_rows("hybrid")
    print(f"{len(rows)} train queries, {sum(not ex.relevant.any() for _, _, ex in rows)} with nothing relevant")
    for seed in args.seeds:
        print(f"\nseed {seed}: share of held-out queries ranked right at 1 that pass the gate, at each absent rate")
        print(_table(_held_out(rows, seed)))


if __name__ == "__main__":
    asyncio.run(main())
