"""What start-up opens from the settings — the catalog, its search index, the chat model, the audit log —
each failure one `StartupError` line naming the variable to fix. Used by the composition root (bot.py)
and by the maintenance commands (agent/commands.py)."""

from __future__ import annotations

import logging
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.audit import AuditLog
from agent.breaker import Breaker
from agent.settings import Settings, StartupError, audit_target
from db.audit_store import DatabaseUrl, StoreError, open_reader, open_store
from db.build import write_catalog
from db.connection import CatalogUnavailable, open_readonly
from db.records import Catalog, demo_catalog
from retrieval.embedders import Embedder, EmbeddingError
from retrieval.index import BuildReport, IndexProblem, build_index
from retrieval.passages import save_vectors, stored_vectors_path
from retrieval.service import catalog_docs, load_passages, load_search, make_embedder, policy_passages

if TYPE_CHECKING:   # the chat stack and the openai client load only where a process answers customers
    from agent.openai_model import OpenAIChatModel
    from agent.turn import Agent

log = logging.getLogger("kefu")


def write_catalog_or_stop(path: Path, catalog: Catalog, source: str) -> None:
    """Write a catalog; a path that cannot be written is one clear line naming DATABASE_PATH."""
    try:
        write_catalog(path, catalog, source=source)
    except OSError as exc:
        raise StartupError(f"DATABASE_PATH: cannot write the catalog at {path} ({exc.strerror})") from None


def ensure_catalog(settings: Settings, path: Path | None = None) -> bool:
    """Create the demo catalog at the default location if there is no file there yet (True when it was
    created). A catalog path of one's own that does not exist is refused: a typo must never serve the
    demo shop's prices to a real shop's customers."""
    path = path or settings.database_path
    if path.exists():
        return False
    settings.check_catalog(path)
    write_catalog_or_stop(path, demo_catalog(settings.today), "demo")
    log.warning("no catalog at %s: created the demo catalog", path)
    return True


def index_path_for(settings: Settings, catalog: Path) -> Path:
    """INDEX_PATH, else the index beside the catalog."""
    return settings.index_path or catalog.with_suffix(".index")


def embedder_from(settings: Settings) -> Embedder:
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return make_embedder(settings.embedding_model, str(settings.embedding_base_url or settings.openai_base_url or "")
                         or None, key, settings.embedding_dimensions, settings.llm_timeout_seconds,
                         settings.llm_max_retries, settings.llm_connect_timeout_seconds,
                         Breaker("embeddings", settings.llm_breaker_failures, settings.llm_breaker_cooldown_seconds),
                         settings.embedding_concurrency)


def chat_model_from(settings: Settings) -> OpenAIChatModel | None:
    """The remote chat model when OPENAI_API_KEY is set, else None (the agent's offline model)."""
    if settings.openai_api_key is None:
        return None
    from agent.openai_model import OpenAIChatModel
    return OpenAIChatModel.from_settings(settings.openai_api_key.get_secret_value(),
                                         str(settings.openai_base_url) if settings.openai_base_url else None,
                                         settings.llm_model, settings.llm_timeout_seconds, settings.llm_max_retries,
                                         settings.llm_connect_timeout_seconds,
                                         Breaker("chat", settings.llm_breaker_failures,
                                                 settings.llm_breaker_cooldown_seconds))


async def build_search_index(settings: Settings, *, rebuild: bool, progress: bool,
                             catalog: Path | None = None) -> BuildReport:
    """Embed the catalog's new or changed products into its index (the demo catalog first, at the default
    location only, if there is none)."""
    catalog = catalog or settings.database_path
    ensure_catalog(settings, catalog)
    try:
        conn = await open_readonly(catalog)
        try:
            docs = await catalog_docs(conn)
            passages = await policy_passages(conn)
        finally:
            await conn.close()
        embedder, index = embedder_from(settings), index_path_for(settings, catalog)
        report = await build_index(index, docs, embedder, rebuild=rebuild, progress=progress)
        await save_vectors(stored_vectors_path(index), passages, embedder, keep=not rebuild)
        return report
    except (CatalogUnavailable, IndexProblem, EmbeddingError) as exc:
        raise StartupError(str(exc)) from None


async def prepare_catalog(settings: Settings) -> None:
    """Before the bot answers: the catalog (the demo one at the default location on a first run) and,
    for hybrid search, its index — built now when missing (with a progress bar on a terminal), so a
    first start and a start after an import search alike. An INDEX_PATH of one's own must exist."""
    ensure_catalog(settings)
    if settings.search_mode == "lexical" or settings.resolved_index_path.exists():
        return
    if settings.explicit("index_path", settings.database_path.with_suffix(".index")):
        raise StartupError(f"INDEX_PATH: no search index at {settings.resolved_index_path} — build it there with "
                           "`python bot.py build-index`, or leave INDEX_PATH unset (the index beside the catalog)")
    log.warning("no search index at %s: building it now", settings.resolved_index_path)
    await build_search_index(settings, rebuild=False, progress=sys.stderr.isatty())


@asynccontextmanager
async def open_agent(settings: Settings) -> AsyncIterator[Agent]:
    """The agent over the catalog (read-only), its search and the configured model; closes them after.
    The first run creates the demo catalog and its index."""
    from agent.turn import Agent
    await prepare_catalog(settings)
    try:
        conn = await open_readonly(settings.database_path)
    except CatalogUnavailable as exc:
        raise StartupError(f"DATABASE_PATH: {exc}") from None
    async with AsyncExitStack() as stack:
        stack.push_async_callback(conn.close)
        try:
            search = await load_search(conn, settings.resolved_index_path, embedder_from(settings),
                                       lexical=settings.search_mode == "lexical")
        except IndexProblem as exc:
            raise StartupError(f"INDEX_PATH: {exc}") from None
        passages = await load_passages(conn, search.embedder, stored_vectors_path(settings.resolved_index_path))
        model = chat_model_from(settings)
        if model is not None:
            stack.push_async_callback(model.close)
        yield Agent(conn, search, model, turn_budget_seconds=settings.turn_budget_seconds,
                    today=lambda: settings.today, passages=passages)


DEFAULT_AUDIT_DB = Path("data/audit.db")


def open_audit_store(settings: Settings, queue_size: int | None = None) -> Any:
    """The audit store AUDIT_DB names (db.audit_store.open_store chooses SQLite or PostgreSQL by its
    scheme), or the one-line StartupError that stops start-up: an AUDIT_DB file of one's own must be in a
    folder that exists (a typo must not start a second audit trail); a PostgreSQL that does not answer is
    named by host and database, never by its URL."""
    target = audit_target(settings.audit_db)
    if isinstance(target, Path) and settings.explicit("audit_db", DEFAULT_AUDIT_DB) and not target.parent.is_dir():
        raise StartupError(f"AUDIT_DB: the folder {target.parent} does not exist — check the path, "
                           "or create the folder first")
    try:
        return open_store(target, settings.audit_retention_days, *([queue_size] if queue_size else []))
    except (OSError, sqlite3.Error) as exc:
        raise StartupError(f"AUDIT_DB: cannot open the audit store at {target} ({exc})") from None
    except StoreError as exc:
        raise StartupError(f"AUDIT_DB: {exc}") from None


def open_audit_reader(target: Path | DatabaseUrl, name: str = "AUDIT_DB") -> Any:
    """A reader of the store for a command (`audit`, `stats`); None while a SQLite file does not exist yet."""
    if isinstance(target, Path) and not target.exists():
        return None
    try:
        return open_reader(target)
    except StoreError as exc:
        raise StartupError(f"{name}: {exc}") from None


def open_audit(settings: Settings) -> AuditLog:
    """The audit log: the store AUDIT_DB names (a SQLite file, or PostgreSQL for a postgresql:// URL) and,
    when AUDIT_PATH is set, a JSON Lines copy."""
    store = open_audit_store(settings)
    return AuditLog(store, settings.audit_path)
