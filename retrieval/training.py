"""Fitting the learned fusion (retrieval/ranker.py) on the `train` split of the shipped query sets of
every shipped catalog. The `test` split is never read here: it measures what this produced."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from db.records import Catalog
from retrieval.bridge import BRIDGE_FEATURES
from retrieval.embedders import Embedder
from retrieval.evaluation import EvalQuery, open_search
from retrieval.glosses import ENGLISH_FEATURES
from retrieval.ranker import MODES, Ranker, fit_logistic, fit_pairwise
from retrieval.search import ProductSearch, Signals

HARD_NEGATIVES = 25      # the strongest irrelevant products under each signal, per query
PAIRS_PER_QUERY = 300    # every query weighs about the same, however many products are relevant to it
# The gate's threshold rejects this share of the train split's absent queries. The issue asks for 95%, but
# each point more costs real queries (measured on train, 5-fold: at 85% ~97% of well-ranked queries pass
# the gate, at 90% ~92%, at 95% ~81%; the last absent ones are near misses such as 电动滑板车 or
# 乒乓球发球机), and at 90% a described need (骑车时头老出汗) of the shopping dialogues is refused already.
ABSENT_REJECTED = 0.85


@dataclass
class Example:
    """One training query, its per-product features and which products are relevant."""

    signals: Signals
    features: np.ndarray
    relevant: np.ndarray   # bool per product


async def examples(search: ProductSearch, queries: Sequence[EvalQuery]) -> dict[str, list[Example]]:
    """Per search mode (retrieval/ranker.py MODES), one Example per query: the lexical mode sees the same
    signals without the dense ones."""
    if any(q.split == "test" for q in queries):
        raise ValueError("the ranker is fitted on the train split only")
    await search.prime([q.query for q in queries])
    position = {d.product_id: i for i, d in enumerate(search.docs)}
    out: dict[str, list[Example]] = {mode: [] for mode in MODES}
    for q in queries:
        relevant = np.zeros(len(search.docs), dtype=bool)
        relevant[[position[p] for p in q.relevant if p in position]] = True
        s = await search.signals(q.query)
        lexical = replace(s, dense_z=None, view_z=(), best_document_z=None, synonyms=None)
        out["hybrid"].append(Example(s, s.features(), relevant))
        out["lexical"].append(Example(lexical, lexical.features(), relevant))
    return out


async def train(catalogs: Sequence[tuple[Catalog, Sequence[EvalQuery]]], embedder: Embedder,
                trained_on: str, absent_rejected: float = ABSENT_REJECTED,
                keep: dict[str, Ranker] | None = None) -> dict[str, Ranker]:
    """Fit one ranker per search mode on the train split of every (catalog, queries) pair, then the weights
    of its English evidence on top (fit_english), then those of the Chinese synonym bridge (fit_bridge). With
    `keep` (the shipped rankers), only the English evidence's and the bridge's weights are fitted, every other
    weight and the gate kept as they are."""
    found: dict[str, list[Example]] = {mode: [] for mode in MODES}
    for catalog, queries in catalogs:
        search = await open_search(catalog, embedder, progress=True)
        for mode, rows in (await examples(search, [q for q in queries if q.split == "train"])).items():
            found[mode] += rows
    return {mode: fit_bridge(fit_english(keep[mode] if keep is not None else fit(rows, trained_on, absent_rejected),
                                         rows), rows)
            for mode, rows in found.items()}


def _pairs(examples: Sequence[Example], rng: np.random.Generator) -> np.ndarray:
    blocks = []
    for ex in examples:
        pos = np.flatnonzero(ex.relevant)
        if not len(pos):
            continue
        hard: set[int] = set()
        for column in range(ex.features.shape[1]):
            ranked = np.argsort(-ex.features[:, column], kind="stable")
            hard.update(int(i) for i in ranked[:HARD_NEGATIVES + len(pos)] if not ex.relevant[i])
        hard.update(int(i) for i in rng.choice(len(ex.relevant), size=min(20, len(ex.relevant)), replace=False)
                    if not ex.relevant[i])
        neg = np.array(sorted(hard))
        if not len(neg):
            continue
        pi, ni = np.meshgrid(pos, neg, indexing="ij")
        pairs = ex.features[pi.ravel()] - ex.features[ni.ravel()]
        if len(pairs) > PAIRS_PER_QUERY:
            pairs = pairs[rng.choice(len(pairs), PAIRS_PER_QUERY, replace=False)]
        blocks.append(pairs)
    return np.vstack(blocks)


KEEP_WITHIN = 2.5   # the band below the best candidate that a search keeps, in the scaled score's units
BAND_QUANTILE = 0.99   # …and keeps this share of the train split's relevant products (the best BAND_RELEVANT
BAND_RELEVANT = 3      # of each query's, best first)


def fit(examples: Sequence[Example], trained_on: str, absent_rejected: float = ABSENT_REJECTED) -> Ranker:
    """The ranker from pairs, its scores scaled so that KEEP_WITHIN below the best keeps BAND_QUANTILE of the
    train split's best BAND_RELEVANT relevant products of each query (agent/tools.py widens that band for a
    filtered search), then the gate."""
    rng = np.random.default_rng(24)
    weights = fit_pairwise(_pairs(examples, rng))
    gaps = []
    for ex in examples:
        if ex.relevant.any():
            scores = ex.features @ weights
            # the best few relevant products, not only the best one: a listing (都有哪些跑鞋) names them all
            best_relevant = np.sort(scores[ex.relevant])[::-1][:BAND_RELEVANT]
            gaps += [float(scores.max() - s) for s in best_relevant]
    weights *= KEEP_WITHIN / max(float(np.quantile(gaps, BAND_QUANTILE)), 1e-6)
    rows, labels = [], []
    for ex in examples:
        scores = ex.features @ weights
        order = np.argsort(-scores, kind="stable")[:2]
        rows.append(ex.signals.gate_features(scores, int(order[0]), float(scores[order[1]])))
        labels.append(float(ex.relevant.any()))
    x, y = np.array(rows), np.array(labels)
    gate_w, gate_b = fit_logistic(x, y)
    p = 1 / (1 + np.exp(-(x @ gate_w + gate_b)))
    threshold = float(np.quantile(p[y == 0], absent_rejected)) if (y == 0).any() else 0.0
    return Ranker(weights.astype(np.float32), gate_w.astype(np.float32), float(gate_b), threshold, KEEP_WITHIN,
                  trained_on)


ENGLISH_L2 = 1e-3


def fit_english(ranker: Ranker, examples: Sequence[Example], use: Sequence[bool] | None = None) -> Ranker:
    """`ranker` with the weights of the English evidence (Signals.english, ENGLISH_FEATURES) fitted on the
    examples that have it, every other weight, the gate and its threshold held as they are: a query without
    Latin words is scored, and gated, exactly as before. The weights minimize fit_pairwise's loss over
    (relevant, strongest irrelevant) pairs of those queries, each pair's margin the fixed ranker's plus the
    evidence's (the irrelevant ones: the best under the fixed scores and under each column of the evidence);
    every query weighs the same. `use` masks columns out (a column left out keeps weight 0)."""
    k = len(ENGLISH_FEATURES)
    mask = np.array(use if use is not None else [True] * k, dtype=bool)
    blocks = []
    for ex in examples:
        english = ex.signals.english
        pos = np.flatnonzero(ex.relevant)
        if english is None or not len(pos):
            continue
        base = ranker.score(ex.features)
        hard: set[int] = set()
        for column in (base, *(english[:, j] for j in np.flatnonzero(mask))):
            ranked = np.argsort(-column, kind="stable")
            hard.update(int(i) for i in ranked[:HARD_NEGATIVES + len(pos)] if not ex.relevant[i])
        neg = np.array(sorted(hard))
        pi, ni = (a.ravel() for a in np.meshgrid(pos, neg, indexing="ij"))
        blocks.append((base[pi] - base[ni], english[pi][:, mask] - english[ni][:, mask]))
    if not blocks:
        return replace(ranker, english_weights=np.zeros(k, np.float32))
    margin0 = np.concatenate([b for b, _ in blocks]).astype(np.float64)
    diffs = np.vstack([d for _, d in blocks]).astype(np.float64)
    weight = np.concatenate([np.full(len(b), 1 / (len(b) * len(blocks))) for b, _ in blocks])
    w = fit_pairwise(diffs, l2=ENGLISH_L2, steps=1500, lr=1.0, offset=margin0, weight=weight)
    weights = np.zeros(k, np.float32)
    weights[mask] = w
    return replace(ranker, english_weights=weights)


BRIDGE_L2 = 1e-3
# the gate reads the exact link alone (a sense of the query's word is, word for word, the product's English name):
# 5-fold CV on train, with the partial overlaps (gloss, cover) read by the gate too it let more absent near
# misses through (轮滑鞋 → shoe ~ climbing shoes); exact alone took demo synonyms 0.690 → 0.793, absent unchanged
BRIDGE_GATE = ("bridge_exact",)
BRIDGE_GATE_BIAS = False   # no bias for the queries the bridge reads: a link can only raise the gate, never lower it
BRIDGE_GATE_L2 = 1e-4


def fit_bridge(ranker: Ranker, examples: Sequence[Example], gate: bool = True,
               gate_columns: Sequence[str] = BRIDGE_GATE, gate_bias: bool = BRIDGE_GATE_BIAS) -> Ranker:
    """`ranker` with the weights of the Chinese synonym bridge (Signals.bridge, BRIDGE_FEATURES) fitted on the
    examples that have it, every other weight, the gate's own weights and its threshold held as they are: a
    query the bridge does not read is scored, and gated, exactly as before. First the ranker's bridge weights,
    as fit_english fits its own (fit_pairwise's loss, the fixed ranker's margin as offset, every query weighing
    the same); then, with those scores, the gate's bridge weights and bias: a logistic loss over those
    examples (relevant or nothing to find) whose offset is the fixed gate's log-odds, classes weighed as the
    gate weighs them (fit_logistic's balance over every example), so the threshold keeps its meaning; the gate
    reads `gate_columns` of the bridge (the others keep weight 0), and a bias only when `gate_bias`."""
    k = len(BRIDGE_FEATURES)
    read = [ex for ex in examples if ex.signals.bridge is not None]
    ranker = replace(ranker, bridge_weights=np.zeros(k, np.float32), gate_bridge_weights=np.zeros(k, np.float32),
                     gate_bridge_bias=0.0)
    blocks = []
    for ex in read:
        bridge, pos = ex.signals.bridge, np.flatnonzero(ex.relevant)
        if not len(pos):
            continue
        base = ranker.score(ex.features, ex.signals.english)
        hard: set[int] = set()
        for column in (base, *(bridge[:, j] for j in range(k))):
            ranked = np.argsort(-column, kind="stable")
            hard.update(int(i) for i in ranked[:HARD_NEGATIVES + len(pos)] if not ex.relevant[i])
        neg = np.array(sorted(hard))
        pi, ni = (a.ravel() for a in np.meshgrid(pos, neg, indexing="ij"))
        blocks.append((base[pi] - base[ni], bridge[pi] - bridge[ni]))
    if blocks:
        margin0 = np.concatenate([b for b, _ in blocks]).astype(np.float64)
        diffs = np.vstack([d for _, d in blocks]).astype(np.float64)
        weight = np.concatenate([np.full(len(b), 1 / (len(b) * len(blocks))) for b, _ in blocks])
        w = fit_pairwise(diffs, l2=BRIDGE_L2, steps=1500, lr=1.0, offset=margin0, weight=weight)
        ranker = replace(ranker, bridge_weights=w.astype(np.float32))
    if not gate or not read:
        return ranker
    positive = float(np.mean([ex.relevant.any() for ex in examples]))
    offsets, rows, labels = [], [], []
    for ex in read:
        _, gate_scores, best, runner_up = ranker.gate_view(ex.features, ex.signals.english, ex.signals.bridge)
        offsets.append(ranker.gate_logit(ex.signals.gate_features(gate_scores, best, runner_up)))
        rows.append(ex.signals.bridge[best])
        labels.append(float(ex.relevant.any()))
    use = np.array([f in gate_columns for f in BRIDGE_FEATURES])
    x, y, offset = np.array(rows, np.float64) * use, np.array(labels), np.array(offsets)
    balance = np.where(y > 0, 0.5 / max(positive, 1e-6), 0.5 / max(1 - positive, 1e-6))
    w, b, lr = np.zeros(k), 0.0, 0.5
    for _ in range(4000):
        p = 1 / (1 + np.exp(-(offset + x @ w + b)))
        g = (p - y) * balance
        w -= lr * ((x * g[:, None]).mean(axis=0) + 2 * BRIDGE_GATE_L2 * w)
        if gate_bias:
            b -= lr * (g.mean() + 2 * BRIDGE_GATE_L2 * b)
    return replace(ranker, gate_bridge_weights=w.astype(np.float32), gate_bridge_bias=float(b))


def served(ranker: Ranker, ex: Example, top_k: int = 5) -> list[int]:
    """The products a search returns for one training example under `ranker`: ProductSearch._rank's rule
    (the gate, the hypernym family when it refuses, the keep band), so a fold scores what a customer sees."""
    bridge = ex.signals.bridge
    scores, gate_scores, best, runner_up = ranker.gate_view(ex.features, ex.signals.english, bridge)
    order = np.argsort(-scores, kind="stable")
    at_best = bridge[best] if bridge is not None else None
    if ranker.gate(ex.signals.gate_features(gate_scores, best, runner_up), at_best) < ranker.gate_threshold:
        family = ex.signals.family
        if family is None or not family.any():
            return []
        return [int(i) for i in np.argsort(-np.where(family, scores, -np.inf), kind="stable")[:top_k] if family[i]]
    best = float(scores[order[0]])
    return [int(i) for i in order[:top_k] if float(scores[i]) >= best - ranker.keep_within]


def cross_validate(rows: Sequence[tuple[str, EvalQuery, Example]], folds: int = 5,
                   absent_rejected: float = ABSENT_REJECTED, seed: int = 7,
                   english: Sequence[bool] | None = None, bridge: str = "all") -> dict[str, dict[str, float]]:
    """k-fold cross-validation on the train split: `rows` are (catalog, query, example); each fold's ranker
    and gate are fitted on the other folds and scored on it (`bridge`: "all" as shipped, "rank" without its gate
    weights, "none" without the bridge). Per catalog: Recall@1 per kind and overall, and
    `absent`, the share of queries with nothing relevant that got nothing. A candidate feature or data
    change is judged by this, never by the frozen test split (an in-sample score flatters a feature that
    only memorizes the train queries: bench/README.md, retrieval quality)."""
    if any(q.split == "test" for _, q, _ in rows):
        raise ValueError("cross-validation reads the train split only")
    fold = np.random.default_rng(seed).integers(0, folds, len(rows))
    hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for k in range(folds):
        held = [r for r, f in zip(rows, fold, strict=True) if f == k]
        if not held:
            continue
        fitted_on = [r[2] for r, f in zip(rows, fold, strict=True) if f != k]
        ranker = fit(fitted_on, "cross-validation", absent_rejected)
        if english is None or any(english):   # as shipped: the English evidence fitted after the rest
            ranker = fit_english(ranker, fitted_on, english)
        if bridge != "none":   # as shipped: the bridge fitted after the English evidence ("rank": no gate part)
            ranker = fit_bridge(ranker, fitted_on, gate=bridge == "all")
        for catalog, query, ex in held:
            ids = served(ranker, ex)
            if not ex.relevant.any():
                hits[(catalog, "absent")].append(not ids)
                continue
            first = bool(ids) and bool(ex.relevant[ids[0]])
            hits[(catalog, query.kind)].append(first)
            hits[(catalog, "overall")].append(first)
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (catalog, kind), values in sorted(hits.items()):
        out[catalog][kind] = round(float(np.mean(values)), 4)
    return dict(out)


async def train_rows(catalogs: Sequence[tuple[str, Catalog, Sequence[EvalQuery]]], embedder: Embedder,
                     mode: str = "hybrid") -> list[tuple[str, EvalQuery, Example]]:
    """(catalog, query, example) for every train query of every named catalog, for cross_validate."""
    out = []
    for name, catalog, queries in catalogs:
        search = await open_search(catalog, embedder)
        train_split = [q for q in queries if q.split == "train"]
        out += [(name, q, ex) for q, ex in zip(train_split, (await examples(search, train_split))[mode], strict=True)]
    return out
