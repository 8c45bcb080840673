"""The dense side of a large catalog: float16 vectors memory-mapped from one file per generation and a
usearch HNSW graph (float16) over the ranking view, opened as a view, so every worker process on a host
shares one copy in the page cache. Generations are published atomically (new files, then a pointer
renamed into place); a reader keeps the generation it opened until it asks for the new one.

Below ANN_THRESHOLD products the bot keeps the exact full scan over float32 (retrieval/index.py): it is
as fast there and its results are the ones the quality evaluations measured."""

from __future__ import annotations

import fcntl
import hashlib
import json
import mmap
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Products from which the ANN generation is written and searched. Measured in bench/retrieval_scale.py
# (bench/results/retrieval-scale.txt), dense side of one query on two busy cores: at 5,000 products the exact
# scan is faster (p50 2.5-2.7 ms vs 6.6-11 ms), at 10,000 the ANN is (6.8-16 ms vs 12-22 ms). Below it the
# exact float32 scan also keeps every quality figure exactly as evaluated (the outdoor catalog has 2,014).
ANN_THRESHOLD = 8_000
CANDIDATES = 256          # ANN neighbours rescored exactly per query
LEXICAL_CANDIDATES = 256  # best lexical products rescored exactly too (a name match the graph missed)
# HNSW breadth. recall@10 of the dense signals against exact search (bench/retrieval_scale.py, near-duplicate
# vectors): 1.000 up to 100,000 products with a graph built at ef 128 and searched at 384; at 1M such a graph gave
# 0.945-0.975, searched at 768 0.967-0.990, and one built at 256 and searched at 768 0.995 (graph search 2.3 ms)
EXPANSION_SEARCH = 384    # at search, below LARGE_GRAPH products…
LARGE_GRAPH = 200_000     # …and twice that from here on (expansion_search)
CONNECTIVITY = 16
EXPANSION_ADD = 256       # at build
STAT_NAMES = ("rank", "doc", "usage", "name")


def product_key(product_id: str) -> int:
    """A stable 63-bit key for a product id: the ANN graph is keyed by it, so a product keeps its node
    across generations and only changed products are removed and added again."""
    return int.from_bytes(hashlib.blake2b(product_id.encode(), digest_size=8).digest(), "big") >> 1


def pointer_path(index_path: Path) -> Path:
    """The file naming the current generation (replaced atomically)."""
    return index_path.with_name(index_path.name + ".current")


def _gen_prefix(index_path: Path, generation: int) -> Path:
    return index_path.with_name(f"{index_path.name}.g{generation:06d}")


def current_generation(index_path: Path) -> int | None:
    try:
        return int(json.loads(pointer_path(index_path).read_text())["generation"])
    except (FileNotFoundError, ValueError, KeyError, json.JSONDecodeError):
        return None


def content_digest(ids: Sequence[str], hashes: Sequence[str]) -> str:
    """What a generation holds (each product id and its content hash, in order), in 16 hex digits."""
    text = "\x1e".join(f"{p}\x1f{h}" for p, h in zip(ids, hashes, strict=True))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_current(index_path: Path, ids: Sequence[str], hashes: Sequence[str]) -> bool:
    """True when the current generation holds exactly these products at these content hashes (a build
    interrupted between saving the index and publishing leaves it behind: the next build publishes)."""
    try:
        return json.loads(pointer_path(index_path).read_text()).get("digest") == content_digest(ids, hashes)
    except (FileNotFoundError, ValueError, json.JSONDecodeError):
        return False


def _moments(rows: np.ndarray, chunk: int = 65536) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector and Gram matrix VᵀV / n, in chunks (a million rows never need a float32 copy)."""
    d = rows.shape[1]
    total, gram = np.zeros(d, dtype=np.float64), np.zeros((d, d), dtype=np.float64)
    for start in range(0, len(rows), chunk):
        block = np.asarray(rows[start:start + chunk], dtype=np.float32)
        total += block.sum(axis=0)
        gram += block.T @ block
    n = max(len(rows), 1)
    return (total / n).astype(np.float32), (gram / n).astype(np.float32)


def _new_graph(dimensions: int):
    from usearch.index import Index

    # float16, not int8: a graph built on int8 distances plateaued at recall@10 0.958 at 100k products even
    # with 1,024 neighbours rescored; float16 reaches 0.998 (bench/results/retrieval-scale.txt)
    return Index(ndim=dimensions, metric="ip", dtype="f16", connectivity=CONNECTIVITY, expansion_add=EXPANSION_ADD,
                 expansion_search=EXPANSION_SEARCH)


def expansion_search(size: int) -> int:
    """The HNSW search breadth (ef) for a graph of `size` products: a larger graph's near-duplicates need a
    wider search for the same recall (measured above)."""
    return EXPANSION_SEARCH * 2 if size >= LARGE_GRAPH else EXPANSION_SEARCH


def _atomic_write(path: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


@dataclass
class PublishReport:
    generation: int
    added: int      # nodes added to the graph (new or changed products)
    removed: int    # nodes removed (changed or removed products)
    rebuilt: bool   # the graph was built from nothing


@contextmanager
def _publishing(index_path: Path) -> Iterator[None]:
    """One publish at a time per index (two `build-index` runs, an import beside one): an exclusive lock on a
    file beside it, so that each numbers its generation after the other's and never writes the same files."""
    with open(index_path.with_name(index_path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def publish(index_path: Path, ids: Sequence[str], hashes: Sequence[str], views: np.ndarray, names: np.ndarray,
            model: str, threads: int = 0) -> PublishReport:
    """Write a new generation for these vectors ((n, 2, d) document and name+usage views, (n, d) names) and
    make it current. The graph of the current generation is copied and updated by key: a product whose
    content hash is unchanged keeps its node. Readers of the previous generation are unaffected (its files
    stay until the generation after this one is published). Blocks while another process publishes."""
    with _publishing(index_path):
        return _publish(index_path, ids, hashes, views, names, model, threads)


def _publish(index_path: Path, ids: Sequence[str], hashes: Sequence[str], views: np.ndarray, names: np.ndarray,
             model: str, threads: int) -> PublishReport:
    ids, hashes = list(ids), list(hashes)
    n, dims = len(ids), int(views.shape[-1]) if len(views) else int(names.shape[-1])
    keys = np.fromiter((product_key(p) for p in ids), dtype=np.uint64, count=n)
    if len(np.unique(keys)) != n:
        raise ValueError("two product ids share an index key")
    previous = current_generation(index_path)
    generation = (previous or 0) + 1
    prefix = _gen_prefix(index_path, generation)
    stacked = np.empty((n, 3, dims), dtype=np.float16)
    stacked[:, 0], stacked[:, 1], stacked[:, 2] = views[:, 0], views[:, 1], names
    rank = ((views[:, 0].astype(np.float32) + views[:, 1]) / 2) if n else np.zeros((0, dims), dtype=np.float32)

    graph, added, removed, rebuilt = None, n, 0, True
    if previous is not None:
        try:
            old = Generation.open(index_path, previous)
            graph = old.graph.copy() if old.model == model and old.dimensions == dims else None
        except (OSError, ValueError, KeyError):
            graph = None
        if graph is not None:
            before = dict(zip(old.keys.tolist(), old.hashes, strict=True))
            now = dict(zip(keys.tolist(), hashes, strict=True))
            gone = [k for k, h in before.items() if now.get(k) != h]
            fresh = np.array([i for i, k in enumerate(keys.tolist()) if before.get(k) != hashes[i]], dtype=np.int64)
            if gone:
                graph.remove(np.array(gone, dtype=np.uint64))
            if len(fresh):
                graph.add(keys[fresh], rank[fresh], threads=threads)
            added, removed, rebuilt = len(fresh), len(gone), False
    if graph is None:
        graph = _new_graph(dims)
        if n:
            graph.add(keys, rank, threads=threads)
    stats = {name: _moments(m) for name, m in (("rank", rank), ("doc", stacked[:, 0]), ("usage", stacked[:, 1]),
                                              ("name", stacked[:, 2]))}
    order = np.argsort(keys, kind="stable")
    np.save(f"{prefix}.vectors.npy", stacked)
    graph.save(f"{prefix}.graph.usearch")
    np.savez(f"{prefix}.meta.npz", ids=np.array(ids, dtype=str), hashes=np.array(hashes, dtype=str), keys=keys,
             order=order, **{f"{k}_mean": v[0] for k, v in stats.items()},
             **{f"{k}_gram": v[1] for k, v in stats.items()},
             meta=np.array(json.dumps({"model": model, "dimensions": dims, "size": n})))
    _atomic_write(pointer_path(index_path),
                  lambda tmp: tmp.write_text(json.dumps({"generation": generation, "size": n, "model": model,
                                                         "digest": content_digest(ids, hashes)})))
    # the generation before the previous one has no reader that opened it after the previous one was published
    for stale in index_path.parent.glob(f"{index_path.name}.g*.*"):
        try:
            number = int(stale.name[len(index_path.name) + 2:].split(".")[0])
        except ValueError:
            continue
        if number < generation - 1:
            stale.unlink(missing_ok=True)
    return PublishReport(generation, added, removed, rebuilt)


@dataclass
class Generation:
    """One published generation, opened read-only: its vectors and graph are memory-mapped."""

    generation: int
    model: str
    dimensions: int
    ids: list[str]
    hashes: list[str]
    keys: np.ndarray        # per row
    order: np.ndarray       # rows sorted by key
    vectors: np.ndarray     # (n, 3, d) float16, memory-mapped: document, name+usage, bare name
    graph: object           # usearch Index viewed from its file
    stats: dict[str, tuple[np.ndarray, np.ndarray]]
    path: Path | None = None   # the index it was published for (its pointer names the newest generation)

    @property
    def size(self) -> int:
        return len(self.ids)

    @classmethod
    def open(cls, index_path: Path, generation: int | None = None) -> Generation:
        """The given generation, or the current one: a generation deleted between reading the pointer and
        opening its files (two publishes in between) is retried with the pointer read again."""
        if generation is not None:
            return cls._open(index_path, generation)
        for _ in range(3):
            current = current_generation(index_path)
            if current is None:
                raise FileNotFoundError(pointer_path(index_path))
            try:
                return cls._open(index_path, current)
            except FileNotFoundError:
                if current_generation(index_path) == current:
                    raise
        return cls._open(index_path, current_generation(index_path) or 0)

    @classmethod
    def _open(cls, index_path: Path, generation: int) -> Generation:
        from usearch.index import Index

        prefix = _gen_prefix(index_path, generation)
        with np.load(f"{prefix}.meta.npz", allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            ids = [str(x) for x in data["ids"]]
            hashes = [str(x) for x in data["hashes"]]
            keys, order = data["keys"], data["order"]
            stats = {k: (data[f"{k}_mean"], data[f"{k}_gram"]) for k in STAT_NAMES}
        vectors = map_vectors(Path(f"{prefix}.vectors.npy"))
        graph = Index.restore(f"{prefix}.graph.usearch", view=True)
        if graph is None or len(vectors) != len(ids):
            raise ValueError(f"search index generation {generation} is incomplete")
        graph.expansion_search = expansion_search(len(ids))
        return cls(generation, meta["model"], int(meta["dimensions"]), ids, hashes, keys, order, vectors, graph,
                   stats, index_path)

    def neighbours(self, vector: np.ndarray, k: int = CANDIDATES) -> tuple[np.ndarray, np.ndarray]:
        """(rows of the about k best products by the ranking view, best first; their `exact` scores)."""
        rows = self.nearest(vector, k)
        return rows, self.exact(vector, rows)

    def rows_of_keys(self, found: np.ndarray) -> np.ndarray:
        """Row positions of graph keys (every key in the graph has a row)."""
        at = np.searchsorted(self.keys, found, sorter=self.order)
        return self.order[np.minimum(at, len(self.order) - 1)]

    def nearest(self, vector: np.ndarray, k: int = CANDIDATES) -> np.ndarray:
        """Rows of the (about) k best products by the ranking view, best first."""
        if not self.size:
            return np.zeros(0, dtype=np.int64)
        if k >= self.size:   # every row asked for: all of them, exactly (a small graph's search can miss a node)
            rows = np.arange(self.size)
            scores = self.exact(vector, rows)
            return rows[np.argsort(-(scores[:, 0] + scores[:, 1]), kind="stable")]
        matches = self.graph.search(np.asarray(vector, dtype=np.float32), min(k, self.size))
        return self.rows_of_keys(np.asarray(matches.keys, dtype=np.uint64))

    def exact(self, vector: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """(len(rows), 3) exact q·v for each view of these rows (from the float16 vectors)."""
        order = np.argsort(rows)   # ascending rows: the memory map is read forwards
        out = np.empty((len(rows), 3), dtype=np.float32)
        out[order] = np.asarray(self.vectors[rows[order]], dtype=np.float32) @ vector
        return out


def map_vectors(path: Path) -> np.ndarray:
    """A generation's .npy vectors as a read-only array over a shared mapping of the file with every page mapped
    at open (MAP_POPULATE). Measured at 1M products (bench/README, "Retrieval at scale"): this VM evicts file pages
    that no process maps within about a minute, and a lazily mapped file (np.load's mmap_mode) maps only the rows
    a worker has read, so most rows a query reads came from disk (p95 40 ms for 512 rows; 9-10 ms populated). The
    mapping is still the page cache's: every worker on a host shares one copy."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = header(handle)
        offset = handle.tell()
        length = os.fstat(handle.fileno()).st_size
        if length <= offset:   # no rows: nothing to map
            return np.zeros(shape, dtype=dtype)
        mapped = mmap.mmap(handle.fileno(), length, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                           prot=mmap.PROT_READ)
    vectors = np.ndarray(shape, dtype=dtype, buffer=mapped, offset=offset, order="F" if fortran else "C")
    vectors.flags.writeable = False
    return vectors


def _spread(vector: np.ndarray, stats: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
    mean_vector, gram = stats
    mean = float(vector @ mean_vector)
    return mean, float(np.sqrt(max(float(vector @ gram @ vector) - mean * mean, 1e-12)))


class ApproximateDense:
    """A generation bound to the search's product order: the dense signals of one query computed for the ANN
    neighbours and the best lexical products only; every other product gets the lowest z-score seen among the
    neighbours (capped at the catalog mean), which the graph says it cannot beat."""

    approximate = True

    def __init__(self, generation: Generation, product_ids: Sequence[str]):
        self.generation = generation
        self.dimensions = generation.dimensions
        row_of = {pid: i for i, pid in enumerate(generation.ids)}
        self.row_of_doc = np.fromiter((row_of.get(p, -1) for p in product_ids), dtype=np.int64,
                                      count=len(product_ids))
        self.doc_of_row = np.full(generation.size, -1, dtype=np.int64)
        present = self.row_of_doc >= 0
        self.doc_of_row[self.row_of_doc[present]] = np.flatnonzero(present)
        self.present = present
        self.stats = generation.stats
        self.size = len(product_ids)

    def __getitem__(self, docs) -> np.ndarray:
        """Ranking-view rows (float32) of these product positions (for a handful of products)."""
        rows = self.row_of_doc[np.atleast_1d(np.asarray(docs, dtype=np.int64))]
        block = np.asarray(self.generation.vectors[rows], dtype=np.float32)
        return (block[:, 0] + block[:, 1]) / 2

    def neighbours(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the ANN neighbours' product positions, their exact scores): the half of `_scored` that needs no
        lexical candidate, so a large catalog's search runs it beside its lexical side (retrieval/search.py)."""
        rows, scores = self.generation.neighbours(vector)
        docs = self.doc_of_row[rows]
        keep = docs >= 0
        return docs[keep], scores[keep]

    def _scored(self, vector: np.ndarray, lexical: np.ndarray,
                near: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """(the product positions scored exactly: the ANN neighbours (`near`, or searched now) and the lexical
        candidates, ascending; which of them are neighbours; each view's z-scores of them against the whole
        catalog). The neighbours and the other lexical candidates are scored apart, always, so a product's score
        does not depend on whether its neighbours were searched beside the lexical side or after it."""
        neighbours, near_scores = near if near is not None else self.neighbours(vector)
        lexical = np.unique(lexical[self.present[lexical]].astype(np.int64))
        rest = lexical[~np.isin(lexical, neighbours)]
        rest_scores = self.generation.exact(vector, self.row_of_doc[rest]) if len(rest) else np.zeros((0, 3), np.float32)
        docs = np.concatenate([neighbours.astype(np.int64), rest])
        scores = np.concatenate([near_scores, rest_scores]).astype(np.float32, copy=False)
        order = np.argsort(docs, kind="stable")
        docs, scores = docs[order], scores[order]
        if len(docs) > 1:   # a neighbour the graph returned twice: once
            first = np.concatenate([[True], docs[1:] != docs[:-1]])
            docs, scores = docs[first], scores[first]
        columns = {"doc": scores[:, 0], "usage": scores[:, 1], "name": scores[:, 2],
                   "rank": (scores[:, 0] + scores[:, 1]) / 2}
        z = {}
        for name, values in columns.items():
            mean, std = _spread(vector, self.stats[name])
            z[name] = ((values - mean) / std).astype(np.float32)
        return docs, np.isin(docs, neighbours), z

    @staticmethod
    def _best_document(rank: np.ndarray, document: np.ndarray, pool: int) -> float:
        ranked = np.argsort(-rank, kind="stable")[:pool]
        return float(document[ranked].max()) if len(ranked) else 0.0

    def signals(self, vector: np.ndarray, lexical: np.ndarray, pool: int) -> tuple[np.ndarray, tuple, float]:
        """(ranking z, (document z, name+usage z, name z), best document z among the `pool` best ranked), one
        value per product of the catalog."""
        docs, neighbour, z = self._scored(vector, lexical)
        out = {}
        for name, values in z.items():
            floor = min(0.0, float(values[neighbour].min())) if neighbour.any() else 0.0
            full = np.full(self.size, floor, dtype=np.float32)
            full[~self.present] = 0.0
            full[docs] = values
            out[name] = full
        best_document = self._best_document(z["rank"], z["doc"], pool) if len(docs) else 0.0
        return out["rank"], (out["doc"], out["usage"], out["name"]), best_document

    def candidates(self, vector: np.ndarray, lexical: np.ndarray, pool: int,
                   near: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, tuple, float]:
        """`signals` for the scored products alone (a large catalog ranks only them): (their positions, ascending;
        ranking z; (document z, name+usage z, name z); best document z among the `pool` best ranked). `near`: the
        `neighbours` already searched for this vector."""
        docs, _, z = self._scored(vector, lexical, near)
        best_document = self._best_document(z["rank"], z["doc"], pool) if len(docs) else 0.0
        return docs, z["rank"], (z["doc"], z["usage"], z["name"]), best_document
