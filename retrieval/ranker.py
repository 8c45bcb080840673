"""The learned fusion: a linear ranker over per-product signals and a gate over per-query signals, both
fitted on the `train` split of the shipped query sets (never on `test`) and stored as a small JSON file
shipped with the package (retrieval/models/ranker.json; `python bot.py train-retrieval` rewrites it).

Ranker: a pairwise logistic model (RankNet with a linear scorer): for each training query, every relevant
product should score above each of the strongest irrelevant ones. Gate: a logistic model saying whether
the best-ranked product is something the customer asked for at all, or the shop does not sell it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from retrieval.bridge import BRIDGE_FEATURES
from retrieval.glosses import ENGLISH_FEATURES

MODEL_PATH = Path(__file__).resolve().parent / "models" / "ranker.json"

# Per (query, product). The dense z-scores are against the whole catalog, so they do not depend on the
# embedding model's score range; the lexical ones are in 0..1.
FEATURES = ("name", "brand", "bm25", "bm25_covered", "dense", "dense_document", "dense_usage", "dense_name",
            "token_cover", "head", "category", "dense_latin", "dense_described", "name_head",
            "synonym_word", "synonym_query", "synonym_query_latin", "synonym_morpheme", "synonym_morpheme_word",
            "pinyin", "short_form")
# Per query, read at its best-ranked product.
GATE_FEATURES = ("score", "margin", "name", "brand", "head", "category", "token_cover", "coverage",
                 "document_z", "dense", "latin", "described", "bm25_max", "name_z", "best_name_z",
                 "unexplained", "last_unexplained", "synonym_word", "synonym_query", "synonym_last", "synonym_morpheme",
                 "synonym_breadth", "synonym_hypernym", "unknown", "pinyin", "other_kind", "other_head_end",
                 "kin_synonym", "kin_english")


@dataclass
class Ranker:
    weights: np.ndarray          # (len(FEATURES),)
    gate_weights: np.ndarray     # (len(GATE_FEATURES),)
    gate_bias: float
    gate_threshold: float        # a query whose gate probability is below this returns nothing
    keep_within: float           # candidates kept within this of the best score
    trained_on: str = ""
    # the weights of the English evidence (Signals.english, retrieval/glosses.py ENGLISH_FEATURES), fitted after
    # the rest with every other weight held fixed (training.fit_english): a query without Latin words is scored
    # by `weights` alone, exactly as before
    english_weights: np.ndarray = field(default_factory=lambda: np.zeros(len(ENGLISH_FEATURES), np.float32))
    # the Chinese synonym bridge (Signals.bridge, retrieval/bridge.py BRIDGE_FEATURES): its ranker weights, and
    # the gate's weights for its columns at the best product plus a bias, all fitted after the rest with every
    # other weight and the gate's threshold held fixed (training.fit_bridge): a query the bridge does not
    # read is scored and gated by the weights above alone, exactly as before
    bridge_weights: np.ndarray = field(default_factory=lambda: np.zeros(len(BRIDGE_FEATURES), np.float32))
    gate_bridge_weights: np.ndarray = field(default_factory=lambda: np.zeros(len(BRIDGE_FEATURES), np.float32))
    gate_bridge_bias: float = 0.0

    def score(self, features: np.ndarray, english: np.ndarray | None = None,
              bridge: np.ndarray | None = None) -> np.ndarray:
        scores = features @ self.weights
        if english is not None and self.english_weights.any():
            scores = scores + english @ self.english_weights
        if bridge is not None and self.bridge_weights.any():
            scores = scores + bridge @ self.bridge_weights
        return scores

    def gate_view(self, features: np.ndarray, english: np.ndarray | None,
                  bridge: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int, float]:
        """(scores, gate_scores, best, runner_up): the ranking scores, and what the gate reads — the same
        scores without the bridge's part, at the product the ranking put first, against the best other one.
        A partial link (自行车打气筒 → bike helmet) may reorder products but cannot lift a near miss past the
        gate; only the gate's own bridge weights (an exact link) can."""
        scores = self.score(features, english, bridge)
        gate_scores = scores if bridge is None or not self.bridge_weights.any() else self.score(features, english)
        best = int(np.argmax(scores))   # the first of equal best, as a stable sort puts it
        others = np.delete(gate_scores, best)
        runner_up = float(others.max()) if len(others) else float(gate_scores[best])
        return scores, gate_scores, best, runner_up

    def gate_logit(self, features: np.ndarray, bridge: np.ndarray | None = None) -> float:
        """The gate's log-odds; `bridge`: the bridge's columns at the best product, when the query has them."""
        logit = float(features @ self.gate_weights + self.gate_bias)
        if bridge is not None and (self.gate_bridge_weights.any() or self.gate_bridge_bias):
            logit += float(bridge @ self.gate_bridge_weights + self.gate_bridge_bias)
        return logit

    def gate(self, features: np.ndarray, bridge: np.ndarray | None = None) -> float:
        return float(1 / (1 + np.exp(-self.gate_logit(features, bridge))))

    @classmethod
    def from_dict(cls, data: dict) -> Ranker:
        if tuple(data["features"]) != FEATURES or tuple(data["gate_features"]) != GATE_FEATURES:
            raise ValueError("the ranker was trained on other features; run `python bot.py train-retrieval`")
        return cls(np.array([data["weights"][f] for f in FEATURES], dtype=np.float32),
                   np.array([data["gate_weights"][f] for f in GATE_FEATURES], dtype=np.float32),
                   float(data["gate_bias"]), float(data["gate_threshold"]), float(data["keep_within"]),
                   str(data.get("trained_on", "")),
                   np.array([data.get("english_weights", {}).get(f, 0.0) for f in ENGLISH_FEATURES], dtype=np.float32),
                   np.array([data.get("bridge_weights", {}).get(f, 0.0) for f in BRIDGE_FEATURES], dtype=np.float32),
                   np.array([data.get("gate_bridge_weights", {}).get(f, 0.0) for f in BRIDGE_FEATURES],
                            dtype=np.float32),
                   float(data.get("gate_bridge_bias", 0.0)))

    def as_dict(self) -> dict:
        return {"features": list(FEATURES), "weights": dict(zip(FEATURES, map(_r, self.weights), strict=True)),
                "gate_features": list(GATE_FEATURES),
                "gate_weights": dict(zip(GATE_FEATURES, map(_r, self.gate_weights), strict=True)),
                "gate_bias": _r(self.gate_bias), "gate_threshold": _r(self.gate_threshold),
                "keep_within": _r(self.keep_within), "trained_on": self.trained_on,
                "english_weights": dict(zip(ENGLISH_FEATURES, map(_r, self.english_weights), strict=True)),
                "bridge_weights": dict(zip(BRIDGE_FEATURES, map(_r, self.bridge_weights), strict=True)),
                "gate_bridge_weights": dict(zip(BRIDGE_FEATURES, map(_r, self.gate_bridge_weights), strict=True)),
                "gate_bridge_bias": _r(self.gate_bridge_bias)}


MODES = ("hybrid", "lexical")   # with the dense signals, and without them (no index, or the embedder down)


@lru_cache(maxsize=4)
def load_rankers(path: Path = MODEL_PATH) -> dict[str, Ranker]:
    """The shipped models, one per search mode (read once per process: a few kilobytes of JSON)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {mode: Ranker.from_dict(data[mode]) for mode in MODES}


def save_rankers(rankers: dict[str, Ranker], path: Path = MODEL_PATH) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({mode: rankers[mode].as_dict() for mode in MODES}, ensure_ascii=False, indent=1)
    path.write_text(text + "\n", encoding="utf-8")


def _r(x: float) -> float:
    return round(float(x), 5)


def fit_pairwise(pairs: np.ndarray, l2: float = 1e-3, steps: int = 800, lr: float = 0.5,
                 offset: np.ndarray | None = None, weight: np.ndarray | None = None) -> np.ndarray:
    """w minimizing mean log(1 + exp(-(offset + w·d))) + l2·|w|² over the difference vectors d = x_relevant −
    x_other (full-batch gradient descent with a step that halves when the loss goes up: deterministic).
    `offset`: a margin each pair already has from weights held fixed (training.fit_english); `weight`: each
    pair's share of the loss instead of an equal one."""
    w = np.zeros(pairs.shape[1])
    loss = np.inf
    for _ in range(steps):
        margin = pairs @ w if offset is None else offset + pairs @ w
        if weight is None:
            data_loss = float(np.mean(np.logaddexp(0, -margin)))
            grad = -(pairs * (1 / (1 + np.exp(margin)))[:, None]).mean(axis=0)
        else:
            data_loss = float(weight @ np.logaddexp(0, -margin))
            grad = -(pairs * (weight / (1 + np.exp(margin)))[:, None]).sum(axis=0)
        new_loss = data_loss + l2 * w @ w
        if new_loss > loss:
            lr /= 2
        loss = new_loss
        w -= lr * (grad + 2 * l2 * w)
    return w


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 1500,
                 lr: float = 0.5) -> tuple[np.ndarray, float]:
    """(weights, bias) of a class-balanced logistic regression on standardized x; returned weights and bias
    apply to the raw x (the standardization folded in)."""
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mean) / std
    balance = np.where(y > 0, 0.5 / max(y.mean(), 1e-6), 0.5 / max(1 - y.mean(), 1e-6))
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = (p - y) * balance
        w -= lr * ((z * g[:, None]).mean(axis=0) + 2 * l2 * w)
        b -= lr * g.mean()
    return w / std, b - float((w / std) @ mean)
