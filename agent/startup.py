"""What start-up opens from the settings — the catalog, its search index, the chat model, the audit log —
each failure one `StartupError` line naming the variable to fix. Used by the composition root (bot.py)
and by the maintenance commands (agent/commands.py)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import date
from pathlib import Path

from agent.audit import AuditLog
from agent.openai_model import OpenAIChatModel
from agent.settings import Settings, StartupError
from agent.turn import Agent
from db.audit_store import AuditStore
from db.build import write_catalog
from db.connection import CatalogUnavailable, open_readonly
from db.records import Catalog, demo_catalog
from retrieval.embedders import Embedder, EmbeddingError
from retrieval.index import BuildReport, IndexProblem, build_index
from retrieval.service import catalog_docs, load_passages, load_search, make_embedder

log = logging.getLogger("kefu")


def write_catalog_or_stop(path: Path, catalog: Catalog, source: str) -> None:
    """Write a catalog; a path that cannot be written is one clear line naming DATABASE_PATH."""
    try:
        write_catalog(path, catalog, source=source)
    except OSError as exc:
        raise StartupError(f"DATABASE_PATH: cannot write the catalog at {path} ({exc.strerror})") from None


def ensure_catalog(path: Path, today: date) -> bool:
    """Create the demo catalog at `path` if there is no file there yet; True when it was created."""
    if path.exists():
        return False
    write_catalog_or_stop(path, demo_catalog(today), "demo")
    log.warning("no catalog at %s: created the demo catalog", path)
    return True


def embedder_from(settings: Settings) -> Embedder:
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return make_embedder(settings.embedding_model, str(settings.embedding_base_url or settings.openai_base_url or "")
                         or None, key, settings.embedding_dimensions, settings.llm_timeout_seconds,
                         settings.llm_max_retries)


def chat_model_from(settings: Settings) -> OpenAIChatModel | None:
    """The remote chat model when OPENAI_API_KEY is set, else None (the agent's offline model)."""
    if settings.openai_api_key is None:
        return None
    return OpenAIChatModel.from_settings(settings.openai_api_key.get_secret_value(),
                                         str(settings.openai_base_url) if settings.openai_base_url else None,
                                         settings.llm_model, settings.llm_timeout_seconds, settings.llm_max_retries)


async def build_search_index(settings: Settings, *, rebuild: bool, progress: bool) -> BuildReport:
    """Embed the catalog's new or changed products into INDEX_PATH (the demo catalog first, if none)."""
    ensure_catalog(settings.database_path, settings.today)
    try:
        conn = await open_readonly(settings.database_path)
        try:
            docs = await catalog_docs(conn)
        finally:
            await conn.close()
        return await build_index(settings.resolved_index_path, docs, embedder_from(settings), rebuild=rebuild,
                                 progress=progress)
    except (CatalogUnavailable, IndexProblem, EmbeddingError) as exc:
        raise StartupError(str(exc)) from None


async def prepare_catalog(settings: Settings) -> None:
    """First run: create the demo catalog and its search index (55 products, a few seconds).
    An existing catalog's index is never built at start-up: `python bot.py build-index` does that."""
    if ensure_catalog(settings.database_path, settings.today) and not settings.resolved_index_path.exists():
        await build_search_index(settings, rebuild=False, progress=False)


@asynccontextmanager
async def open_agent(settings: Settings) -> AsyncIterator[Agent]:
    """The agent over the catalog (read-only), its search and the configured model; closes them after.
    The first run creates the demo catalog and its index."""
    await prepare_catalog(settings)
    try:
        conn = await open_readonly(settings.database_path)
    except CatalogUnavailable as exc:
        raise StartupError(f"DATABASE_PATH: {exc}") from None
    async with AsyncExitStack() as stack:
        stack.push_async_callback(conn.close)
        try:
            search = await load_search(conn, settings.resolved_index_path, embedder_from(settings))
        except IndexProblem as exc:
            raise StartupError(f"INDEX_PATH: {exc}") from None
        passages = await load_passages(conn, search.embedder)
        model = chat_model_from(settings)
        if model is not None:
            stack.push_async_callback(model.close)
        yield Agent(conn, search, model, turn_budget_seconds=settings.turn_budget_seconds,
                    today=lambda: settings.today, passages=passages)


def open_audit(settings: Settings) -> AuditLog:
    """The audit log: the SQLite store (AUDIT_DB) and, when AUDIT_PATH is set, a JSON Lines copy."""
    try:
        store = AuditStore(settings.audit_db, settings.audit_retention_days)
    except (OSError, sqlite3.Error) as exc:
        raise StartupError(f"AUDIT_DB: cannot open the audit store at {settings.audit_db} ({exc})") from None
    return AuditLog(store, settings.audit_path)
