"""Data a package ships (a dictionary, a thesaurus), read once per process on first use: the first thread to
ask reads it, any other waits for that read instead of starting its own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Once(Generic[T]):
    """`load()` called at most once; every call returns what it returned."""

    def __init__(self, load: Callable[[], T]):
        self._load = load
        self._lock = threading.Lock()
        self._done = False
        self._value: T | None = None

    def __call__(self) -> T:
        if not self._done:
            with self._lock:
                if not self._done:
                    self._value = self._load()
                    self._done = True
        return self._value  # type: ignore[return-value]
