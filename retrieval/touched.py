"""Which products a per-product lexical array is over: every product of the catalog, or — from ANN_THRESHOLD
products on — only those a query's words touch (the median demo query touches a tenth of the catalog), so a
large catalog's BM25, name, brand and pinyin scores are never arrays of a million."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import numpy as np


class AllProducts:
    """Arrays over the whole catalog: a product's place is its catalog position."""

    read = None   # every product of each posting list is read

    def __init__(self, size: int):
        self.size = size

    @staticmethod
    def slots(docs: np.ndarray) -> np.ndarray:
        return docs


class Touched:
    """Arrays over the products a query's words touch (`rows`, ascending catalog positions), with the values
    the catalog-wide arrays hold there, summed in the same order. `slots` maps touched positions to their place
    in those arrays; it is valid until the thread's next `touch`. `read`: only each posting list's best `read`
    products were touched (None: all), and the arrays over them read those alone."""

    def __init__(self, rows: np.ndarray, slot: np.ndarray, read: int | None = None):
        self.rows = rows
        self._slot = slot
        self.read = read

    @property
    def size(self) -> int:
        return len(self.rows)

    def slots(self, docs: np.ndarray) -> np.ndarray:
        """The places of touched products `docs` in arrays over the touched products."""
        return self._slot[docs]

    def at(self, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """`values` (over the touched products) read at catalog positions `rows`: 0 where a row is untouched."""
        out = np.zeros(len(rows), dtype=values.dtype)
        if self.size:
            where = np.minimum(np.searchsorted(self.rows, rows), self.size - 1)
            held = self.rows[where] == rows
            out[held] = values[where[held]]
        return out


Products = AllProducts | Touched


class _Scratch(threading.local):
    """A thread's catalog-sized scratch arrays, allocated once and reused search after search: fresh ones would
    cost a page fault per 4 KB touched (a million products: milliseconds per search)."""

    mask: np.ndarray | None = None
    slot: np.ndarray | None = None

    def get(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        if self.mask is None or len(self.mask) != size:
            self.mask, self.slot = np.zeros(size, dtype=bool), np.zeros(size, dtype=np.int64)
        return self.mask, self.slot


_SCRATCH = _Scratch()


def touch(size: int, hits: Iterable[np.ndarray], read: int | None = None) -> Touched:
    """The products of a catalog of `size` that any of `hits` (arrays of catalog positions) holds (`read`: the
    hits are each posting list's best `read` products)."""
    mask, slot = _SCRATCH.get(size)
    for docs in hits:
        mask[docs] = True
    rows = np.flatnonzero(mask)
    mask[rows] = False   # clean for the thread's next search
    slot[rows] = np.arange(len(rows))
    return Touched(rows, slot, read)
