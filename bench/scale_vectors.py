"""Synthetic vectors for the scale benchmarks: near-duplicates of a sample of real product embeddings
(embedding a million products on this machine is impossible), and queries from real name vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from retrieval.index import VectorIndex


def real_sample(paths: list[Path], model: str) -> tuple[np.ndarray, np.ndarray]:
    """(views (n, 2, d), names (n, d)) of every product in these built indexes."""
    views, names = [], []
    for path in paths:
        index = VectorIndex.load(path, model)
        views.append(index.vectors)
        names.append(index.names)
    return np.concatenate(views), np.concatenate(names)


def _unit(rows: np.ndarray, axis: int = -1) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=axis, keepdims=True)


def near_duplicates(views: np.ndarray, names: np.ndarray, size: int, seed: int = 0,
                    mix: float = 0.3, noise: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """`size` products, each a real product's vectors plus `mix` of another's and Gaussian noise (σ per
    dimension), renormalized: variants of the sample's products that are not copies of each other.
    float16, built in chunks (a million float32 views would be 3 GB)."""
    rng = np.random.default_rng(seed)
    dims = views.shape[-1]
    out_views = np.empty((size, 2, dims), dtype=np.float16)
    out_names = np.empty((size, dims), dtype=np.float16)
    for start in range(0, size, 50_000):
        n = min(50_000, size - start)
        a, b = rng.integers(0, len(views), n), rng.integers(0, len(views), n)
        v = views[a] + mix * views[b] + rng.normal(0, noise, (n, 2, dims)).astype(np.float32)
        out_views[start:start + n] = _unit(v)
        m = names[a] + mix * names[b] + rng.normal(0, noise, (n, dims)).astype(np.float32)
        out_names[start:start + n] = _unit(m)
    return out_views, out_names


def queries(names: np.ndarray, count: int, seed: int = 1, noise: float = 0.02) -> np.ndarray:
    """Query vectors: real name vectors (the query role) with some noise, like a customer's wording."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(names), count)
    return _unit(names[pick] + rng.normal(0, noise, (count, names.shape[-1]))).astype(np.float32)


def exact_top(rank: np.ndarray, qs: np.ndarray, k: int = 10, chunk: int = 200_000) -> np.ndarray:
    """Exact top-k rows by q·v for each query (ground truth), scanning in chunks."""
    best_scores = np.full((len(qs), 0), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(qs), 0), dtype=np.int64)
    for start in range(0, len(rank), chunk):
        scores = qs @ np.asarray(rank[start:start + chunk], dtype=np.float32).T
        rows = np.broadcast_to(np.arange(start, start + scores.shape[1]), scores.shape)
        scores, rows = np.hstack([best_scores, scores]), np.hstack([best_rows, rows])
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        best_scores, best_rows = np.take_along_axis(scores, top, 1), np.take_along_axis(rows, top, 1)
    order = np.argsort(-best_scores, axis=1)
    return np.take_along_axis(best_rows, order, 1)


def recall(found: list[np.ndarray], truth: np.ndarray, k: int = 10) -> float:
    return float(np.mean([len(set(f[:k].tolist()) & set(t[:k].tolist())) / k for f, t in zip(found, truth, strict=True)]))
