"""The demo catalog and its search index as a bot's first start builds them, built once per test run and
copied into a test's own data directory, so a real `python bot.py` process started there skips the build
(~15 s of embedding per process on two cores). Tests that are about the first start itself don't use it.

The build is the bot's own code path (`python bot.py build-index`: the demo catalog when there is none,
then its index with the local embedder), run once per date under a lock file in a directory that every
pytest-xdist worker of the run shares (tests/conftest.py sets SHARED)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from tests.fakes.demo import DEMO_DAY

ROOT = Path(__file__).resolve().parent.parent.parent
SHARED: Path | None = None   # set by tests/conftest.py to a directory of this run, shared by its workers
FILES = ("shop.db", "shop.index", "shop.index.policies.npz")   # the catalog, its index, its policy vectors
# what would make the build anything but the demo catalog with the local embedder
_NOT_PASSED = {"BOT_TOKEN", "OPENAI_API_KEY", "OPENAI_BASE_URL", "EMBEDDING_MODEL", "EMBEDDING_BASE_URL",
               "EMBEDDING_DIMENSIONS", "DATABASE_PATH", "INDEX_PATH", "KEFU_TODAY", "REDIS_URL"}


@contextmanager
def locked(path: Path):
    """An exclusive lock across processes (the xdist workers of one run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shared_dir() -> Path:
    if SHARED is None:
        raise RuntimeError("tests.fakes.prebuilt.SHARED is not set (tests/conftest.py sets it per session)")
    return SHARED


def built(today: str) -> Path:
    """The directory holding shop.db and shop.index for the demo catalog as of `today` (YYYY-MM-DD)."""
    where = shared_dir() / f"data-{today}"
    with locked(shared_dir() / f"data-{today}.lock"):
        if not all((where / name).exists() for name in FILES):
            shutil.rmtree(where, ignore_errors=True)
            building = shared_dir() / f"data-{today}.building"
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir(parents=True)
            env = {k: v for k, v in os.environ.items() if k not in _NOT_PASSED}
            env.update({"DATABASE_PATH": str(building / "shop.db"), "KEFU_TODAY": today})
            result = subprocess.run([sys.executable, str(ROOT / "bot.py"), "init-db", "--quiet"], cwd=building,
                                    env=env, capture_output=True, text=True, timeout=600)
            if result.returncode != 0 or not all((building / name).exists() for name in FILES):
                raise RuntimeError(f"building the demo catalog failed:\n{result.stdout}\n{result.stderr}")
            building.rename(where)
    return where


def demo_data(data_dir: Path, today: str = DEMO_DAY.isoformat()) -> tuple[Path, Path]:
    """Copy the built catalog and index into `data_dir` (a test's own; created): (shop.db, shop.index)."""
    source = built(today)
    data_dir.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy2(source / name, data_dir / name)
    return data_dir / "shop.db", data_dir / "shop.index"
