"""Store policies as Markdown files, chunked by structure: each paragraph, list or table (tables and
lists kept whole) under its heading path is one chunk, cited as `doc:<file>#<n>` (n from 1, in order).
A chunk's title is the path of headings above it ("退换货政策 › 退款时效")."""

from __future__ import annotations

import re
from pathlib import Path

from db.records import KnowledgeRecord
from db.sheets import CatalogError, decode_text

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_TABLE = re.compile(r"^\s*\|")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def _kind(line: str) -> str:
    return "table" if _TABLE.match(line) else "list" if _LIST.match(line) else "text"


def chunk_markdown(name: str, text: str) -> list[KnowledgeRecord]:
    """The chunks of one policy file."""
    chunks: list[KnowledgeRecord] = []
    path: list[str] = []
    block: list[str] = []
    block_kind = ""

    def flush() -> None:
        nonlocal block, block_kind
        content = "\n".join(block).strip()
        if content:
            chunks.append(KnowledgeRecord(f"{name}#{len(chunks) + 1}", " › ".join(path) or name, content))
        block, block_kind = [], ""

    for raw in text.splitlines():
        line = raw.rstrip()
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            path = path[:level - 1] + [heading.group(2)]
            continue
        if not line.strip():
            flush()
            continue
        kind = _kind(line)
        if block and kind != block_kind and not (block_kind == "list" and kind == "text" and raw.startswith(" ")):
            flush()
        block.append(line)
        block_kind = block_kind or kind
    flush()
    return chunks


def read_policies(folder: Path) -> list[KnowledgeRecord]:
    """Every `*.md` file of `folder`, chunked; a file name becomes the id (returns.md → doc:returns#1)."""
    if not folder.is_dir():
        raise CatalogError([f"{folder}: not a folder of Markdown policy files"])
    problems, chunks = [], []
    files = sorted(folder.glob("*.md"))
    if not files:
        problems.append(f"{folder}: contains no .md policy files")
    for file in files:
        if not _NAME.match(file.stem):
            problems.append(f"{file.name}: name policy files with letters, digits, '-' or '_' (it becomes the id)")
            continue
        try:
            text, _ = decode_text(file)
        except CatalogError as exc:
            problems.extend(exc.problems)
            continue
        found = chunk_markdown(file.stem, text)
        if not found:
            problems.append(f"{file.name}: has no text")
        chunks += found
    if problems:
        raise CatalogError(problems)
    return chunks
