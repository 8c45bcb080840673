"""kefu-bot entry point and composition root: reads settings, builds the pieces, runs one mode.

    python bot.py                      run the bot (Telegram with BOT_TOKEN, else the console chat)
    python bot.py init-db              build the demo catalog
    python bot.py import-catalog ...   build the catalog from a shop's own CSV files
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import logging.handlers
import os
import socket
import sqlite3
import sys
import time
from contextlib import asynccontextmanager
from datetime import date
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AnyHttpUrl, Field, RedisDsn, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

log = logging.getLogger("kefu")


class Settings(BaseSettings):
    """Every knob of DESIGN.md's configuration table; read from the environment and `.env`."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore",
                                      env_ignore_empty=True)

    bot_token: SecretStr | None = None
    telegram_api_base: AnyHttpUrl | None = None
    bot_mode: Literal["polling", "webhook"] = "polling"
    webhook_url: AnyHttpUrl | None = None
    webhook_secret: SecretStr | None = None
    webhook_port: int = Field(8080, ge=1, le=65535)
    redis_url: RedisDsn | None = None
    database_path: Path = Path("data/shop.db")
    index_path: Path | None = None
    openai_api_key: SecretStr | None = None
    openai_base_url: AnyHttpUrl | None = None
    llm_model: str = "qwen-plus"
    llm_timeout_seconds: float = Field(20.0, gt=0, le=300)
    llm_max_retries: int = Field(2, ge=0, le=10)
    turn_budget_seconds: float = Field(40.0, gt=0, le=600)
    embedding_model: str | None = None
    embedding_base_url: AnyHttpUrl | None = None
    embedding_dimensions: int | None = Field(None, ge=1, le=8192)
    operator_ids: Annotated[list[int], NoDecode] = Field(default_factory=list)
    operator_chat_id: int | None = None
    handoff_idle_minutes: float = Field(30.0, gt=0, le=7 * 24 * 60)
    service_hours: str | None = None
    memory_ttl_seconds: int = Field(7 * 24 * 3600, ge=60)
    redis_prefix: str = "kefu:"
    rate_limit_messages: int = Field(20, ge=1, le=10_000)
    rate_limit_window_seconds: int = Field(60, ge=1, le=86_400)
    max_message_chars: int = Field(1000, ge=10, le=4096)
    audit_db: Path = Path("data/audit.db")
    audit_retention_days: int = Field(90, ge=1, le=3650)
    audit_path: Path | None = None   # an optional JSON Lines copy, for log shippers
    audit_web_port: int | None = Field(None, ge=1, le=65535)
    audit_web_token: SecretStr | None = None
    audit_web_host: str = "127.0.0.1"
    kefu_today: date | None = None
    inbox_partitions: int = Field(4, ge=1, le=256)
    inbox_lease_ms: int = Field(15_000, ge=500, le=600_000)
    inbox_concurrency: int = Field(32, ge=1, le=10_000)

    @property
    def today(self) -> date:
        """KEFU_TODAY when set (demos and tests are then deterministic), else today in Asia/Shanghai."""
        from agent.clock import today_shanghai

        return self.kefu_today or today_shanghai()

    @field_validator("operator_ids", mode="before")
    @classmethod
    def _split_ids(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("service_hours")
    @classmethod
    def _check_hours(cls, value: str | None) -> str | None:
        if value is not None:
            from agent.handoff import ServiceHours

            ServiceHours.parse(value)
        return value

    @property
    def resolved_index_path(self) -> Path:
        return self.index_path or self.database_path.with_suffix(".index")


class StartupError(Exception):
    """A problem that stops start-up; its message is one clear line for the operator."""


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]).upper() if first["loc"] else "configuration"
        # The input value is deliberately not echoed: it may be a secret.
        raise StartupError(f"invalid {name}: {first['msg']}") from None


def write_catalog_or_stop(path: Path, catalog, source: str) -> None:
    """Write a catalog; a path that cannot be written is one clear line naming DATABASE_PATH."""
    from db.build import write_catalog

    try:
        write_catalog(path, catalog, source=source)
    except OSError as exc:
        raise StartupError(f"DATABASE_PATH: cannot write the catalog at {path} ({exc.strerror})") from None


def ensure_catalog(path: Path, today: date) -> bool:
    """Create the demo catalog at `path` if there is no file there yet; True when it was created."""
    if path.exists():
        return False
    from db.records import demo_catalog

    write_catalog_or_stop(path, demo_catalog(today), "demo")
    log.warning("no catalog at %s: created the demo catalog", path)
    return True


# --- subcommands ------------------------------------------------------------------------------------

def cmd_init_db(args: argparse.Namespace, settings: Settings) -> int:
    from db.records import demo_catalog

    path = Path(args.path) if args.path else settings.database_path
    if path.exists() and not args.force:
        print(f"A catalog already exists at {path}; add --force to rebuild it from the demo data.")
        return 1
    catalog = demo_catalog(settings.today)
    write_catalog_or_stop(path, catalog, "demo")
    print(f"Demo catalog written to {path}: {len(catalog.products)} products, "
          f"{len(catalog.promotions)} promotions, {len(catalog.knowledge)} policy documents.")
    return 0


def cmd_import_catalog(args: argparse.Namespace, settings: Settings) -> int:
    from db.records import CatalogError, read_catalog_csv

    path = Path(args.path) if args.path else settings.database_path
    opt = lambda p: Path(p) if p else None  # noqa: E731
    try:
        catalog = read_catalog_csv(Path(args.products), opt(args.promotions), opt(args.knowledge), opt(args.orders))
    except CatalogError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"Import refused: {len(exc.problems)} problem(s); nothing was written, {path} is unchanged.",
              file=sys.stderr)
        return 1
    write_catalog_or_stop(path, catalog, f"import:{Path(args.products).name}")
    print(f"Catalog written to {path}: {len(catalog.products)} products, {len(catalog.promotions)} promotions, "
          f"{len(catalog.knowledge)} policy documents, {len(catalog.orders)} order lines.")
    print("Run `python bot.py build-index` to update the search index for the new catalog.")
    return 0


def embedder_from(settings: Settings):
    from retrieval.service import make_embedder

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return make_embedder(settings.embedding_model, str(settings.embedding_base_url or settings.openai_base_url or "")
                         or None, key, settings.embedding_dimensions, settings.llm_timeout_seconds,
                         settings.llm_max_retries)


def cmd_build_index(args: argparse.Namespace, settings: Settings) -> int:

    from db.connection import CatalogUnavailable, open_readonly
    from retrieval.embedders import EmbeddingError
    from retrieval.index import IndexProblem, build_index
    from retrieval.service import catalog_docs

    ensure_catalog(settings.database_path, settings.today)
    path = settings.resolved_index_path

    async def run() -> int:
        conn = await open_readonly(settings.database_path)
        try:
            docs = await catalog_docs(conn)
        finally:
            await conn.close()
        report = await build_index(path, docs, embedder_from(settings), rebuild=args.rebuild,
                                   progress=not args.quiet)
        print(f"Search index {path}: embedded {report.embedded}, kept {report.kept}, removed {report.removed} "
              f"({report.seconds:.1f} s).")
        return 0

    try:
        return asyncio.run(run())
    except (CatalogUnavailable, IndexProblem, EmbeddingError) as exc:
        raise StartupError(str(exc)) from None
    except KeyboardInterrupt:
        print("Interrupted: finished work is saved; run the same command again to resume.", file=sys.stderr)
        return 130


def cmd_eval_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    import tempfile

    from db.build import write_catalog
    from db.connection import open_readonly
    from db.records import CatalogError, demo_catalog, read_catalog_json
    from retrieval.embedders import EmbeddingError
    from retrieval.evaluation import QueriesError, evaluate, format_report, load_queries
    from retrieval.index import build_index
    from retrieval.service import catalog_docs, load_passages, load_search

    try:
        catalog = read_catalog_json(Path(args.catalog)) if args.catalog else demo_catalog(settings.today)
        default = "policy_queries.jsonl" if args.policies else "demo_queries.jsonl"
        queries = load_queries(Path(args.queries) if args.queries else
                               Path(__file__).resolve().parent / "retrieval" / "evalsets" / default)
    except (CatalogError, QueriesError) as exc:
        print(str(exc), file=sys.stderr)
        return 1

    async def run() -> dict:
        with tempfile.TemporaryDirectory(prefix="kefu-eval-") as tmp:
            db_path, index_path = Path(tmp) / "catalog.db", Path(tmp) / "catalog.index"
            write_catalog(db_path, catalog, source="eval")
            embedder = embedder_from(settings)
            conn = await open_readonly(db_path)
            try:
                if args.policies:   # store-policy chunks: BM25 alone, or fused with the embedder
                    passages = await load_passages(conn, None if args.lexical_only else embedder)

                    async def retrieve_chunks(query: str) -> list[str]:
                        return [pid for pid, _ in await passages.search(query, top_k=10)]

                    return await evaluate(retrieve_chunks, queries)
                if not args.lexical_only:
                    await build_index(index_path, await catalog_docs(conn), embedder, progress=not args.json)
                search = await load_search(conn, index_path, embedder)

                async def retrieve(query: str) -> list[str]:
                    return [c.product_id for c in await search.search(query, top_k=10)]

                return await evaluate(retrieve, queries)
            finally:
                await conn.close()

    try:
        report = asyncio.run(run())
    except EmbeddingError as exc:
        raise StartupError(str(exc)) from None
    if args.json:
        print(json.dumps({k: report[k] for k in ("overall", "by_kind", "empty")}, ensure_ascii=False))
    else:
        what = "store-policy chunks" if args.policies else "products"
        print(format_report(report, f"kefu-bot {'lexical' if args.lexical_only else 'hybrid'} retrieval of {what}"))
        if args.show_misses:
            for miss in report["misses"]:
                print("  miss:", json.dumps(miss, ensure_ascii=False))
    return 0


def chat_model_from(settings: Settings):
    """The remote chat model when OPENAI_API_KEY is set, else None (the agent's offline model)."""
    if settings.openai_api_key is None:
        return None
    from agent.openai_model import OpenAIChatModel

    return OpenAIChatModel.from_settings(settings.openai_api_key.get_secret_value(),
                                         str(settings.openai_base_url) if settings.openai_base_url else None,
                                         settings.llm_model, settings.llm_timeout_seconds, settings.llm_max_retries)


async def build_agent(settings: Settings):
    """Open the catalog read-only, load the search, choose the model: the agent and what to close."""
    from agent.turn import Agent
    from db.connection import CatalogUnavailable, open_readonly
    from retrieval.index import IndexProblem
    from retrieval.service import load_passages, load_search

    try:
        conn = await open_readonly(settings.database_path)
    except CatalogUnavailable as exc:
        raise StartupError(f"DATABASE_PATH: {exc}") from None
    try:
        search = await load_search(conn, settings.resolved_index_path, embedder_from(settings))
    except IndexProblem as exc:
        await conn.close()
        raise StartupError(f"INDEX_PATH: {exc}") from None
    passages = await load_passages(conn, search.embedder)
    model = chat_model_from(settings)
    agent = Agent(conn, search, model, turn_budget_seconds=settings.turn_budget_seconds, today=lambda: settings.today,
                  passages=passages)
    return agent, conn, model


def prepare_catalog(settings: Settings) -> None:
    """First run: create the demo catalog and its search index (55 products, a few seconds).
    An existing catalog's index is never built at start-up: `python bot.py build-index` does that."""
    if ensure_catalog(settings.database_path, settings.today) and not settings.resolved_index_path.exists():
        cmd_build_index(argparse.Namespace(rebuild=False, quiet=True), settings)


def cmd_eval_dialogues(args: argparse.Namespace, settings: Settings) -> int:
    """Run the dialogue evaluation through the real turn loop (the configured model) and print pass rates."""
    from agent.evaluation import load_dialogues, report, run_dialogues

    try:
        dialogues = load_dialogues(Path(args.dialogues) if args.dialogues else None)
    except (OSError, ValueError) as exc:
        raise StartupError(f"--dialogues: {exc}") from None
    prepare_catalog(settings)

    async def run() -> int:
        agent, conn, model = await build_agent(settings)
        try:
            outcomes = await run_dialogues(agent, dialogues)
        finally:
            await conn.close()
            if model is not None:
                await model.close()
        print(report(outcomes, show_failures=args.show_failures))
        return 0

    return asyncio.run(run())


def cmd_eval_routing(args: argparse.Namespace, settings: Settings) -> int:
    """Score the message router on its training split (cross-validated) and its frozen test split."""
    from agent.routing_train import cmd_eval

    return cmd_eval(args)


def cmd_train_router(args: argparse.Namespace, settings: Settings) -> int:
    """Retrain the message router from agent/evalsets/routing-train.jsonl (deterministic)."""
    from agent.routing_train import cmd_train

    return cmd_train(args)


def cmd_console(args: argparse.Namespace, settings: Settings) -> int:
    """The console chat: the same conversation as Telegram (REDIS_URL, limits, 转人工) in a terminal."""
    from agent.conversation import Conversation, Limits
    from db.knowledge import contact_policy
    from handlers.console import run_console
    from handlers.voice import Voice

    prepare_catalog(settings)

    async def run() -> int:
        redis = await connect_redis(settings)
        agent, conn, model = await build_agent(settings)
        audit = open_audit(settings)
        try:
            sessions, _, guards = chat_stores(settings, redis, warn=False)
            policy = await contact_policy(conn)
            conversation = Conversation(agent, sessions, audit, limits=Limits(settings.max_message_chars),
                                        rate=guards.rate)
            async with audit_web(settings, audit):
                return await run_console(conversation, Voice(contact_text=policy.content if policy else ""),
                                         show_trace=args.show_trace)
        finally:
            audit.close()
            await conn.close()
            if model is not None:
                await model.close()
            if redis is not None:
                await redis.aclose()

    return asyncio.run(run())


def chat_stores(settings: Settings, redis, *, inbox_mode: bool = False, warn: bool = True):
    """The chats' sessions, handoff store and guards: in Redis with REDIS_URL, in this process otherwise."""
    if redis is not None:
        from agent.handoff import RedisHandoffStore
        from agent.memory_redis import RedisMemory
        from handlers.guards import RedisGuards
        from handlers.sessions import RedisSessions

        handoffs = RedisHandoffStore(redis, settings.redis_prefix)
        sessions = RedisSessions(redis, RedisMemory(redis, settings.memory_ttl_seconds, prefix=settings.redis_prefix),
                                 handoffs)
        guards = RedisGuards(redis, settings.redis_prefix, settings.rate_limit_messages,
                             settings.rate_limit_window_seconds, lock_seconds=settings.turn_budget_seconds + 30,
                             rate_in_process=inbox_mode)
        return sessions, handoffs, guards
    from agent.handoff import LocalHandoffStore
    from agent.memory import InProcessMemory
    from agent.session import InProcessSessions
    from handlers.guards import LocalGuards

    handoffs = LocalHandoffStore()
    return InProcessSessions(InProcessMemory(warn=warn), handoffs), handoffs, \
        LocalGuards(settings.rate_limit_messages, settings.rate_limit_window_seconds)


async def connect_redis(settings: Settings):
    """A Redis client that answers, or None without REDIS_URL; an unreachable Redis stops start-up."""
    if settings.redis_url is None:
        return None
    from redis.asyncio import Redis

    from handlers.metrics import CountingConnection

    client = Redis.from_url(str(settings.redis_url), socket_timeout=5, socket_connect_timeout=5,
                            health_check_interval=30, connection_class=CountingConnection)
    try:
        await client.ping()
    except Exception as exc:   # noqa: BLE001 - whatever the reason, the line below says what to fix
        await client.aclose()
        raise StartupError(f"REDIS_URL: Redis does not answer ({type(exc).__name__})") from None
    return client


async def run_telegram(settings: Settings, role: Literal["all", "work"] = "all") -> int:
    """`all`: take updates from Telegram and answer them in this process; `work`: answer what the durable
    inbox holds (another process receives)."""
    from agent.conversation import Conversation, Limits
    from agent.handoff import ServiceHours
    from db.knowledge import contact_policy
    from handlers.app import make_bot, run_polling, run_webhook
    from handlers.guards import ChatSequencer
    from handlers.handoff import Desk
    from handlers.operators import Operators
    from handlers.telegram import build_dispatcher

    _webhook_settings(settings)
    redis = await connect_redis(settings)
    agent, conn, model = await build_agent(settings)
    audit = open_audit(settings)
    sweeper = None
    # with Redis, even one process goes through the durable inbox (receive, then work)
    inbox_mode = role == "work" or redis is not None
    try:
        sessions, handoffs, guards = chat_stores(settings, redis, inbox_mode=inbox_mode)
        options = telegram_options(settings)
        bot = make_bot(options)
        policy = await contact_policy(conn)
        hours = ServiceHours.parse(settings.service_hours) if settings.service_hours else \
            ServiceHours.from_policy(policy.content if policy else "")
        conversation = Conversation(agent, sessions, audit, limits=Limits(settings.max_message_chars),
                                    rate=guards.rate, desk=settings.operator_chat_id is not None)
        desk = Desk(bot, handoffs, conversation, settings.operator_chat_id, hours,
                    settings.handoff_idle_minutes * 60, policy.content if policy else "", audit)
        if desk.enabled:
            sweeper = asyncio.create_task(desk.run_sweeper())
        elif settings.operator_ids:
            log.info("OPERATOR_CHAT_ID is not set: no handoff; operator commands work in a private chat")
        sequencer = ChatSequencer()
        from handlers.inbox import Inbox

        inbox = Inbox(redis, settings.redis_prefix, settings.inbox_partitions) if inbox_mode else None
        dispatcher = build_dispatcher(operators=Operators(frozenset(settings.operator_ids), settings.operator_chat_id),
                                      conversation=conversation, desk=desk, analyst=agent.analyst, guards=guards,
                                      sequencer=sequencer, audit=audit, inbox=inbox)
        dispatcher.shutdown.register(desk.finish)
        async with audit_web(settings, audit):
            if inbox is not None:
                from handlers.app import run_worker

                await run_worker(dispatcher, bot, sequencer, inbox, f"{socket.gethostname()}-{os.getpid()}", options,
                                 settings.inbox_lease_ms, guards, receiving=role == "all",
                                 concurrency=settings.inbox_concurrency)
            elif settings.bot_mode == "webhook":
                await run_webhook(dispatcher, bot, sequencer, guards, options)
            else:
                await run_polling(dispatcher, bot, sequencer, options)
        log.info("stopped")
        return 0
    finally:
        if sweeper is not None:
            sweeper.cancel()
        audit.close()
        await conn.close()
        if model is not None:
            await model.close()
        if redis is not None:
            await redis.aclose()


@asynccontextmanager
async def audit_web(settings: Settings, audit):
    """The web audit console on AUDIT_WEB_PORT while the bot runs (nothing when the port is unset)."""
    if settings.audit_web_port is None:
        yield
        return
    if settings.audit_web_token is None or len(settings.audit_web_token.get_secret_value()) < 12:
        raise StartupError("AUDIT_WEB_PORT needs AUDIT_WEB_TOKEN (at least 12 characters) for the login")
    from aiohttp import web

    from handlers.web.app import build_web_app

    runner = web.AppRunner(build_web_app(audit.store, settings.audit_web_token.get_secret_value()))
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.audit_web_host, settings.audit_web_port).start()
    except OSError as exc:
        await runner.cleanup()
        raise StartupError(f"AUDIT_WEB_PORT: cannot listen on {settings.audit_web_host}:{settings.audit_web_port} "
                           f"({exc.strerror})") from None
    log.info("audit console on http://%s:%d/", settings.audit_web_host, settings.audit_web_port)
    try:
        yield
    finally:
        await runner.cleanup()


def open_audit(settings: Settings):
    """The audit log: the SQLite store (AUDIT_DB) and, when AUDIT_PATH is set, a JSON Lines copy."""
    from agent.audit import AuditLog
    from db.audit_store import AuditStore

    try:
        store = AuditStore(settings.audit_db, settings.audit_retention_days)
    except (OSError, sqlite3.Error) as exc:
        raise StartupError(f"AUDIT_DB: cannot open the audit store at {settings.audit_db} ({exc})") from None
    return AuditLog(store, settings.audit_path)


def _webhook_settings(settings: Settings) -> None:
    if settings.bot_mode == "webhook" and (settings.webhook_url is None or settings.webhook_secret is None):
        raise StartupError("BOT_MODE=webhook needs WEBHOOK_URL and WEBHOOK_SECRET")


def _needs_inbox(settings: Settings, role: str) -> None:
    if settings.bot_token is None:
        raise StartupError(f"`bot.py {role}` needs BOT_TOKEN")
    if settings.redis_url is None:
        raise StartupError(f"`bot.py {role}` needs REDIS_URL: the inbox lives in Redis Streams")


def telegram_options(settings: Settings):
    from handlers.app import TelegramOptions

    return TelegramOptions(
        token=settings.bot_token.get_secret_value(),
        api_base=str(settings.telegram_api_base) if settings.telegram_api_base else None,
        mode=settings.bot_mode, webhook_url=str(settings.webhook_url) if settings.webhook_url else None,
        webhook_secret=settings.webhook_secret.get_secret_value() if settings.webhook_secret else None,
        port=settings.webhook_port)


def cmd_receive(args: argparse.Namespace, settings: Settings) -> int:
    """Receive only: long-poll Telegram, or (BOT_MODE=webhook) take Telegram's POSTs as one of several
    replicas, and append every update to the durable inbox."""
    _needs_inbox(settings, "receive")
    _webhook_settings(settings)
    from handlers.app import make_bot, run_receiver
    from handlers.guards import RedisGuards
    from handlers.inbox import Inbox

    async def run() -> int:
        redis = await connect_redis(settings)
        try:
            options = telegram_options(settings)
            await run_receiver(make_bot(options), Inbox(redis, settings.redis_prefix, settings.inbox_partitions), options,
                               RedisGuards(redis, settings.redis_prefix))
            return 0
        finally:
            await redis.aclose()

    return asyncio.run(run())


def cmd_work(args: argparse.Namespace, settings: Settings) -> int:
    """Work only: answer the updates the inbox holds, for the partitions this process leases."""
    _needs_inbox(settings, "work")
    prepare_catalog(settings)
    return asyncio.run(run_telegram(settings, role="work"))


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:

    if settings.bot_token is None:
        return cmd_console(args, settings)
    prepare_catalog(settings)
    return asyncio.run(run_telegram(settings))


def _moment(text: str | None, name: str):
    """A --since/--until value: YYYY-MM-DD (midnight Asia/Shanghai) or a full ISO 8601 time."""
    from datetime import datetime

    from agent.clock import SHANGHAI

    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise StartupError(f"{name}: expected YYYY-MM-DD or an ISO 8601 time, got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=SHANGHAI)


def _audit_reader(args: argparse.Namespace, settings: Settings):
    from db.audit_store import AuditReader

    path = Path(args.db) if args.db else settings.audit_db
    if not path.exists():
        print(f"No audit store at {path} (the bot creates it on its first turn; AUDIT_DB chooses where).")
        return None
    return AuditReader(path)


def cmd_audit(args: argparse.Namespace, settings: Settings) -> int:
    from agent.audit import summary_line
    from db.audit_store import AuditFilter

    reader = _audit_reader(args, settings)
    if reader is None:
        return 0 if args.audit_command == "tail" else 1
    try:
        if args.audit_command == "export":
            return _export(reader, args)
        where = AuditFilter(chat_id=args.chat, blocked_only=args.blocked)
        records = reader.query(where, limit=args.n)[::-1]
        if not records and not args.follow:
            print(f"No matching audit records in {reader.path}.")
        show = (lambda r: json.dumps(r, ensure_ascii=False)) if args.json else summary_line
        for record in records:
            print(show(record))
        if args.follow:
            last = max((r["id"] for r in records), default=0) or \
                max((r["id"] for r in reader.query(AuditFilter(), limit=1)), default=0)
            try:
                while True:
                    for record in reader.query(where, limit=500, newest_first=False, after_id=last):
                        print(show(record), flush=True)
                        last = record["id"]
                    time.sleep(0.5)
            except KeyboardInterrupt:
                return 0
        return 0
    finally:
        reader.close()


def _export(reader, args: argparse.Namespace) -> int:
    from agent.analytics.stats import to_csv
    from db.audit_store import AuditFilter

    where = AuditFilter(since=_moment(args.since, "--since"), until=_moment(args.until, "--until"))
    records = list(reader.iterate(where))
    out = sys.stdout.buffer
    if args.output:
        out = open(args.output, "wb")  # noqa: SIM115 - closed below
    try:
        if args.format == "csv":
            out.write(to_csv(records))
        else:
            for record in records:
                out.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    finally:
        if args.output:
            out.close()
    print(f"{len(records)} audit records exported{' to ' + args.output if args.output else ''}.", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python bot.py", description="kefu-bot: a grounded shop assistant.")
    sub = parser.add_subparsers(dest="command")

    run = sub.add_parser("run", help="run the bot (Telegram with BOT_TOKEN, else the console chat); the default")
    run.add_argument("--show-trace", action="store_true", help="console: print each turn's trace")
    run.set_defaults(func=cmd_run)

    receive = sub.add_parser("receive", help="take updates from Telegram into the durable inbox (Redis Streams)")
    receive.set_defaults(func=cmd_receive)
    work = sub.add_parser("work", help="answer the updates the durable inbox holds (run as many as you like)")
    work.set_defaults(func=cmd_work)

    console = sub.add_parser("console", help="chat with the bot in this terminal (demo catalog by default)")
    console.add_argument("--show-trace", action="store_true", help="print each turn's trace")
    console.set_defaults(func=cmd_console)

    init = sub.add_parser("init-db", help="build the demo catalog")
    init.add_argument("--path", help="catalog file to write (default: DATABASE_PATH)")
    init.add_argument("--force", action="store_true", help="replace an existing catalog")
    init.set_defaults(func=cmd_init_db)

    imp = sub.add_parser("import-catalog", help="build the catalog from the shop's CSV files")
    imp.add_argument("products", help="products CSV: product_id,product_name,brand,price,stock_quantity,...")
    imp.add_argument("promotions", nargs="?", help="promotions CSV (optional)")
    imp.add_argument("--knowledge", help="store policies: a folder of Markdown files (chunked by heading, paragraph and table), or a CSV doc_id,title,content")
    imp.add_argument("--orders", help="orders CSV, one product per row: order_id,user_id,product_id,quantity,total,status,region,created_at")
    imp.add_argument("--path", help="catalog file to write (default: DATABASE_PATH)")
    imp.set_defaults(func=cmd_import_catalog)

    idx = sub.add_parser("build-index", help="embed new or changed products into the search index (resumable)")
    idx.add_argument("--rebuild", action="store_true", help="start from scratch (another model, or a corrupt index)")
    idx.add_argument("--quiet", action="store_true", help="no progress bar")
    idx.set_defaults(func=cmd_build_index)

    ev = sub.add_parser("eval-retrieval", help="measure retrieval on a catalog and a query set")
    ev.add_argument("--catalog", help="catalog JSON (a list of product records); default: the demo catalog")
    ev.add_argument("--queries", help="queries JSON Lines; default: the shipped demo evaluation set")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument("--lexical-only", action="store_true", help="measure without the vector index")
    ev.add_argument("--show-misses", action="store_true", help="list the queries missed at rank 3")
    ev.add_argument("--policies", action="store_true",
                    help="measure the search over store-policy chunks (default set: retrieval/evalsets/policy_queries.jsonl)")
    ev.set_defaults(func=cmd_eval_retrieval)

    dia = sub.add_parser("eval-dialogues", help="run the dialogue evaluation and print the pass rate per family")
    dia.add_argument("--dialogues", help="dialogues JSON Lines; default: every shipped set (train and frozen test)")
    dia.add_argument("--show-failures", action="store_true", help="print each failed dialogue with its answers")
    dia.set_defaults(func=cmd_eval_dialogues)

    routing = sub.add_parser("eval-routing", help="score the message router: train split cross-validated, test split")
    routing.add_argument("--weights", help="weights file (default: the shipped agent/models/router.npz)")
    routing.add_argument("--test", help="test split file (default: agent/evalsets/routing-test.jsonl)")
    routing.add_argument("--no-cv", action="store_true", help="skip the cross-validation of the training split")
    routing.add_argument("--show-misses", action="store_true", help="list the misrouted test messages")
    routing.set_defaults(func=cmd_eval_routing)
    router = sub.add_parser("train-router", help="retrain the message router from its corpus (agent/models/router.npz)")
    router.add_argument("--corpus", help="training corpus (default: agent/evalsets/routing-train.jsonl)")
    router.add_argument("--out", help="weights file to write (default: agent/models/router.npz)")
    router.add_argument("--cache", help="a .npz file caching the embeddings between runs (optional)")
    router.set_defaults(func=cmd_train_router)

    audit = sub.add_parser("audit", help="read the audit store")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    audit_tail = audit_sub.add_parser("tail", help="the latest turns (and, with -f, new ones as they come)")
    audit_tail.add_argument("-f", "--follow", action="store_true", help="keep printing new records")
    audit_tail.add_argument("-n", type=int, default=20, help="how many records (default 20)")
    audit_tail.add_argument("--chat", help="only this chat id")
    audit_tail.add_argument("--blocked", action="store_true", help="only turns with a blocked draft, degraded or fallback")
    audit_tail.add_argument("--json", action="store_true", help="print the raw JSON records")
    audit_tail.add_argument("--db", help="audit store (default: AUDIT_DB)")
    audit_tail.set_defaults(func=cmd_audit)
    audit_export = audit_sub.add_parser("export", help="the audit records of a period as CSV (UTF-8 with BOM) or JSON Lines")
    audit_export.add_argument("--since", help="YYYY-MM-DD (Asia/Shanghai) or an ISO 8601 time; default: the beginning")
    audit_export.add_argument("--until", help="YYYY-MM-DD (Asia/Shanghai) or an ISO 8601 time, exclusive; default: now")
    audit_export.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    audit_export.add_argument("--output", "-o", help="file to write (default: standard output)")
    audit_export.add_argument("--db", help="audit store (default: AUDIT_DB)")
    audit_export.set_defaults(func=cmd_audit)
    return parser


def log_off_the_loop() -> logging.handlers.QueueListener:
    """Log lines are queued and written to stderr by a thread of their own: a slow reader of the log
    (a full pipe, a busy log driver) never stalls the event loop. aiogram's line per update is left out
    (the audit log has one per turn)."""
    import queue

    lines: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    writer = logging.StreamHandler()
    writer.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(logging.handlers.QueueHandler(lines))
    logging.getLogger("aiogram.event").setLevel(logging.WARNING)
    listener = logging.handlers.QueueListener(lines, writer)
    listener.start()
    return listener


def main(argv: list[str] | None = None) -> int:
    listener = log_off_the_loop()
    args = build_parser().parse_args(argv)
    if getattr(args, "func", None) is None:
        args = build_parser().parse_args(["run"])
    try:
        return args.func(args, load_settings())
    except StartupError as exc:
        print(f"kefu-bot: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        listener.stop()


if __name__ == "__main__":
    sys.exit(main())
