"""The maintenance commands of `python bot.py`: build or import the catalog, build the search index,
evaluate retrieval, dialogues and the router, retrain the router, read the audit store. None of them
talks to Telegram, so they live here, where the catalog, the index and the agent are all in reach.

Each command imports what it runs when it runs: `--help`, `init-db` or `audit tail` do not load the
embedding model, the chat model's SDK or the turn."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from agent.clock import SHANGHAI, shop_iso
from agent.settings import Settings, StartupError


def cmd_init_db(args: argparse.Namespace, settings: Settings) -> int:
    from agent.startup import write_catalog_or_stop
    from db.records import demo_catalog

    path = Path(args.path) if args.path else settings.database_path
    if path.exists() and not args.force:
        print(f"A catalog already exists at {path}; add --force to rebuild it from the demo data.")
        return 1
    catalog = demo_catalog(settings.today)
    write_catalog_or_stop(path, catalog, "demo")
    print(f"Demo catalog written to {path}: {len(catalog.products)} products, "
          f"{len(catalog.promotions)} promotions, {len(catalog.knowledge)} policy documents.")
    return _index_catalog(settings, path, args)


def _index_catalog(settings: Settings, path: Path, args: argparse.Namespace) -> int:
    """After a catalog is written: its search index, updated now (only new or changed products are
    embedded), so the bot searches it as it would after any other start. --no-index leaves it."""
    if args.no_index or settings.search_mode == "lexical":
        print("Search index not updated: the bot builds what is missing when it starts.")
        return 0
    return _build_index(settings, path, rebuild=False, quiet=args.quiet)


def cmd_import_catalog(args: argparse.Namespace, settings: Settings) -> int:
    from agent.startup import write_catalog_or_stop
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
    return _index_catalog(settings, path, args)


def cmd_build_index(args: argparse.Namespace, settings: Settings) -> int:
    return _build_index(settings, Path(args.path) if args.path else settings.database_path, rebuild=args.rebuild,
                        quiet=args.quiet)


def _build_index(settings: Settings, catalog: Path, *, rebuild: bool, quiet: bool) -> int:
    from agent.startup import build_search_index, index_path_for

    try:
        report = asyncio.run(build_search_index(settings, rebuild=rebuild, progress=not quiet, catalog=catalog))
    except KeyboardInterrupt:
        print("Interrupted: finished work is saved; run the same command again to resume.", file=sys.stderr)
        return 130
    print(f"Search index {index_path_for(settings, catalog)}: embedded {report.embedded}, kept {report.kept}, "
          f"removed {report.removed} ({report.seconds:.1f} s).")
    return 0


def cmd_eval_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    """Measure product (or store-policy) search on one or more catalogs: per kind Recall@1/@3, MRR@10 and
    how often a query with nothing relevant got candidates, for each split of the query set."""
    from agent.startup import embedder_from
    from db.records import CatalogError, demo_catalog, read_catalog_json
    from retrieval.embedders import EmbeddingError
    from retrieval.evaluation import (
        SHIPPED,
        QueriesError,
        by_split,
        evaluate,
        format_report,
        load_queries,
        open_search,
    )

    evalsets = Path(__file__).resolve().parent.parent / "retrieval" / "evalsets"
    runs = []   # (title, catalog, queries)
    try:
        for name in args.catalog or [None]:
            shipped = SHIPPED.get(name or "")
            path = shipped[0] if shipped else (Path(name) if name else None)
            catalog = read_catalog_json(path) if path else demo_catalog(settings.today)
            default = shipped[1] if shipped else evalsets / ("policy_queries.jsonl" if args.policies
                                                             else "demo_queries.jsonl")
            runs.append((name or "demo", catalog, load_queries(Path(args.queries) if args.queries else default)))
    except (CatalogError, QueriesError) as exc:
        print(str(exc), file=sys.stderr)
        return 1

    async def measure(catalog, queries) -> dict:
        embedder = None if args.lexical_only else embedder_from(settings)
        if args.policies:   # store-policy chunks: BM25 alone, or fused with the embedder
            return {split: await _eval_policies(catalog, embedder, qs) for split, qs in by_split(queries, args.split).items()}
        search = await open_search(catalog, embedder, progress=not args.json)
        await search.prime([q.query for q in queries])

        async def retrieve(query: str) -> list[str]:
            return [c.product_id for c in await search.search(query, top_k=10)]

        return {split: await evaluate(retrieve, qs) for split, qs in by_split(queries, args.split).items()}

    reports = {}
    try:
        for title, catalog, queries in runs:
            reports[title] = asyncio.run(measure(catalog, queries))
    except EmbeddingError as exc:
        raise StartupError(str(exc)) from None
    if args.json:
        keep = lambda r: {k: r[k] for k in ("overall", "by_kind", "empty")}  # noqa: E731
        out = {t: {s: keep(r) for s, r in splits.items()} for t, splits in reports.items()}
        only = next(iter(out.values()))
        print(json.dumps(only["all"] if len(out) == 1 and list(only) == ["all"] else out, ensure_ascii=False))
        return 0
    what = "store-policy chunks" if args.policies else "products"
    for title, splits in reports.items():
        for split, report in splits.items():
            print(format_report(report, f"kefu-bot {'lexical' if args.lexical_only else 'hybrid'} retrieval of "
                                        f"{what} · {title} · {split}"))
            if args.show_misses:
                for miss in report["misses"]:
                    print("  miss:", json.dumps(miss, ensure_ascii=False))
            print()
    return 0


def cmd_train_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    """Refit the learned fusion of product search on the train split of the shipped query sets."""
    from agent.startup import embedder_from
    from db.records import demo_catalog, read_catalog_json
    from retrieval.evaluation import SHIPPED, load_queries
    from retrieval.ranker import MODEL_PATH, load_rankers, save_rankers
    from retrieval.training import train

    if not 0 < args.absent_rejected < 1:
        raise StartupError("--absent-rejected: a share between 0 and 1, e.g. 0.95")
    catalogs = [(read_catalog_json(path) if path else demo_catalog(settings.today), load_queries(queries))
                for path, queries in SHIPPED.values()]
    trained_on = "train split of " + ", ".join(q.name for _, q in SHIPPED.values())
    out = Path(args.out) if args.out else MODEL_PATH
    keep = load_rankers(out if out.exists() else MODEL_PATH) if args.english_only else None
    rankers = asyncio.run(train(catalogs, embedder_from(settings), trained_on, args.absent_rejected, keep))
    save_rankers(rankers, out)
    print(f"Ranker written to {out} ({trained_on}); measure it: python bot.py eval-retrieval "
          "--catalog demo --catalog outdoor")
    return 0


async def _eval_policies(catalog, embedder, queries) -> dict:
    from db.build import write_catalog
    from db.connection import open_readonly
    from retrieval.evaluation import evaluate
    from retrieval.service import load_passages

    with tempfile.TemporaryDirectory(prefix="kefu-eval-") as tmp:
        db_path = Path(tmp) / "catalog.db"
        write_catalog(db_path, catalog, source="eval")
        conn = await open_readonly(db_path)
        try:
            passages = await load_passages(conn, embedder)
        finally:
            await conn.close()

    async def retrieve_chunks(query: str) -> list[str]:
        return [pid for pid, _ in await passages.search(query, top_k=10)]

    return await evaluate(retrieve_chunks, queries)


def cmd_eval_dialogues(args: argparse.Namespace, settings: Settings) -> int:
    """Run the dialogue evaluation through the real turn loop (the configured model) and print pass rates."""
    from agent.evaluation import load_dialogues, report, run_dialogues
    from agent.startup import open_agent

    try:
        dialogues = load_dialogues(Path(args.dialogues) if args.dialogues else None)
    except (OSError, ValueError) as exc:
        raise StartupError(f"--dialogues: {exc}") from None

    async def run() -> int:
        async with open_agent(settings) as agent:
            outcomes = await run_dialogues(agent, dialogues)
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


def _moment(text: str | None, name: str) -> datetime | None:
    """A --since/--until value: YYYY-MM-DD (midnight Asia/Shanghai) or a full ISO 8601 time."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise StartupError(f"{name}: expected YYYY-MM-DD or an ISO 8601 time, got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=SHANGHAI)


# what a terminal acts on rather than shows: C0 and C1 controls and DEL (ESC starts CSI/OSC sequences: clear
# the screen, set the title, write the clipboard), and the bidi controls that reorder what follows
_TERMINAL_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str, keep: str = "") -> str:
    """`text` with every terminal control character shown escaped (ESC as \\x1b); those in `keep` stay."""
    return _TERMINAL_CONTROLS.sub(lambda m: m.group() if m.group() in keep else _escaped(m.group()), text)


def _printable(value):
    """A stored record for the terminal: every string in it (keys too) with its control characters escaped,
    line breaks included, so a record's text cannot move the cursor or start a line of its own."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(v) for v in value]
    return value


def _json_line(record) -> str:
    """JSON escapes C0 controls itself; C1 controls, DEL and bidi controls are escaped too (still valid JSON)."""
    text = json.dumps(record, ensure_ascii=False)
    return _TERMINAL_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def cmd_audit(args: argparse.Namespace, settings: Settings) -> int:
    from agent.audit import summary_line
    from agent.settings import audit_db_for
    from agent.startup import open_audit_reader
    from db.audit_store import AuditFilter

    path = audit_db_for(args.db, settings)
    reader = open_audit_reader(path, "--db" if args.db else "AUDIT_DB")
    if reader is None:
        print(f"No audit store at {path} (the bot creates it on its first turn; AUDIT_DB chooses where).")
        return 0 if args.audit_command == "tail" else 1
    try:
        if args.audit_command == "export":
            return _export(reader, args)
        where = AuditFilter(chat_id=args.chat, blocked_only=args.blocked)
        records = reader.query(where, limit=args.n)[::-1]
        if not records and not args.follow:
            print(f"No matching audit records in {reader.path}.")
        show = _json_line if args.json else (lambda r: terminal_safe(summary_line(_printable(r)), keep="\n"))
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

    where = AuditFilter(since=_moment(args.since, "--since"), until=_moment(args.until, "--until"),
                        misunderstood=args.flagged, kind="turn" if args.flagged else None)
    records = list(reader.iterate(where))
    if args.flagged:   # dialogue-evaluation lines, one per turn the bot may have misunderstood
        from agent.analytics.flagged import as_csv, as_jsonl, dialogues

        lines = list(dialogues(reader, records))
        records, data = lines, (as_csv(lines) if args.format == "csv" else as_jsonl(lines))
    out = sys.stdout.buffer
    if args.output:   # customers' messages: readable by the owner only when created here
        out = os.fdopen(os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")
    try:
        if args.flagged:
            if not args.output and sys.stdout.isatty():   # shown, not saved: no control sequence acts
                data = terminal_safe(data.decode("utf-8"), keep="\t\r\n").encode("utf-8")
            out.write(data)
        elif args.format == "csv":
            data = to_csv(records)
            if not args.output and sys.stdout.isatty():   # shown, not saved: no control sequence acts
                data = terminal_safe(data.decode("utf-8"), keep="\t\r\n").encode("utf-8")
            out.write(data)
        else:
            for record in records:   # times in Asia/Shanghai, like the CSV and the console
                out.write((_json_line({**record, "time": shop_iso(record.get("time"))}) + "\n").encode("utf-8"))
    finally:
        if args.output:
            out.close()
    print(f"{len(records)} audit records exported{' to ' + args.output if args.output else ''}.", file=sys.stderr)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """The maintenance commands' arguments, added to `python bot.py`'s parser after its run modes."""
    # what init-db and import-catalog share: where the catalog goes, and its search index after it
    writes = argparse.ArgumentParser(add_help=False)
    writes.add_argument("--path", help="catalog file to write (default: DATABASE_PATH)")
    writes.add_argument("--quiet", action="store_true", help="no progress bar while the search index is updated")
    writes.add_argument("--no-index", action="store_true", help="do not update the search index now")
    init = sub.add_parser("init-db", help="build the demo catalog", parents=[writes])
    init.add_argument("--force", action="store_true", help="replace an existing catalog")
    init.set_defaults(func=cmd_init_db)

    imp = sub.add_parser("import-catalog", help="build the catalog from the shop's CSV files", parents=[writes])
    imp.add_argument("products", help="products CSV: product_id,product_name,brand,price,stock_quantity,...")
    imp.add_argument("promotions", nargs="?", help="promotions CSV (optional)")
    imp.add_argument("--knowledge", help="store policies: a folder of Markdown files (chunked by heading, paragraph and table), or a CSV doc_id,title,content")
    imp.add_argument("--orders", help="orders CSV, one product per row: order_id,user_id,product_id,quantity,total,status,region,created_at")
    imp.set_defaults(func=cmd_import_catalog)

    idx = sub.add_parser("build-index", help="embed new or changed products into the search index (resumable)")
    idx.add_argument("--rebuild", action="store_true", help="start from scratch (another model, or a corrupt index)")
    idx.add_argument("--quiet", action="store_true", help="no progress bar")
    idx.add_argument("--path", help="the catalog to index (default: DATABASE_PATH); its index goes beside it "
                                    "unless INDEX_PATH is set")
    idx.set_defaults(func=cmd_build_index)

    ev = sub.add_parser("eval-retrieval", help="measure retrieval on a catalog and a query set")
    ev.add_argument("--catalog", action="append",
                    help="`demo` or `outdoor` (a shipped catalog with its held-out query set), or a catalog JSON "
                         "(a list of product records); may be repeated; default: the demo catalog")
    ev.add_argument("--queries", help="queries JSON Lines; default: the catalog's shipped set "
                                      "(retrieval/evalsets/demo_queries.jsonl for the default demo catalog)")
    ev.add_argument("--split", choices=("each", "train", "test", "all"), default="each",
                    help="report each split of the query set apart (default), one split, or all queries together")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument("--lexical-only", action="store_true", help="measure without the vector index")
    ev.add_argument("--show-misses", action="store_true", help="list the queries missed at rank 3")
    ev.add_argument("--policies", action="store_true",
                    help="measure the search over store-policy chunks (default set: retrieval/evalsets/policy_queries.jsonl)")
    ev.set_defaults(func=cmd_eval_retrieval)
    tr = sub.add_parser("train-retrieval", help="refit product search's learned fusion on the train split "
                                                "(retrieval/models/ranker.json)")
    tr.add_argument("--out", help="file to write (default: the shipped retrieval/models/ranker.json)")
    tr.add_argument("--absent-rejected", type=float, default=0.85,
                    help="share of the train split's absent queries the gate must reject (default 0.85, "
                         "see retrieval/training.py)")
    tr.add_argument("--english-only", "--after-only", dest="english_only", action="store_true",
                    help="fit only the weights fitted after the rest — the English evidence's and the Chinese synonym "
                         "bridge's — every other weight and the gate of the shipped model (or --out's) kept as they "
                         "are: a query neither of them reads scores, and is gated, as before")
    tr.set_defaults(func=cmd_train_retrieval)

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
    audit_export.add_argument("--flagged", action="store_true",
                              help="only turns the bot may have misunderstood, as dialogue-evaluation lines "
                                   "(what eval-dialogues reads; CSV one row per message, or JSON Lines)")
    audit_export.add_argument("--output", "-o", help="file to write (default: standard output)")
    audit_export.add_argument("--db", help="audit store (default: AUDIT_DB)")
    audit_export.set_defaults(func=cmd_audit)

    # ask, stats: /ask and /stats without Telegram
    from agent.analytics.commands import add_analytics_commands

    add_analytics_commands(sub)
