"""Reading a shop's spreadsheet exports: the text encoding, and the header checked against the columns
a file of that kind takes, before any row is parsed.

Encoding: UTF-8 (with or without the BOM Excel writes for "CSV UTF-8") is tried first, strictly. A file
that is not UTF-8 is read as GB18030 — a superset of GBK, what Excel's plain "CSV" writes on a Chinese
Windows — and a warning names the file, so the operator can check the names read. A file that is mostly
UTF-8 with a damaged byte, UTF-16 ("Unicode text"), text that is neither, or a file that reads as both
(no Chinese in UTF-8, no BOM) is refused with its line and the hint to save it as "CSV UTF-8"."""

from __future__ import annotations

import codecs
import csv
import difflib
import io
import logging
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SAVE_AS_UTF8 = 'save it from Excel as "CSV UTF-8 (逗号分隔)" (文件 → 另存为) and import that file'


class CatalogError(Exception):
    """A catalog source has problems; `problems` lists each one with its location."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in the catalog:\n" + "\n".join(problems))


@dataclass(frozen=True)
class Columns:
    """The columns one kind of file takes, in the documented order; `required` must be in the header
    (a required column may still have empty cells where its parser allows them)."""

    kind: str
    known: tuple[str, ...]
    required: tuple[str, ...]
    note: str = ""   # said after the required columns when the header is wrong


PRODUCTS = Columns("products", ("product_id", "product_name", "category", "brand", "price", "stock_quantity",
                                "description", "specifications", "usage", "aliases"),
                   ("product_id", "product_name", "price"),
                   "; leave a product's price cell empty when it has no price")
PROMOTIONS = Columns("promotions", ("promotion_id", "product_id", "promotion_text", "discount_type", "discount_value",
                                    "minimum_quantity", "minimum_spend", "extra_condition"),
                     ("promotion_id", "product_id", "promotion_text", "discount_type"))
KNOWLEDGE = Columns("policies", ("doc_id", "title", "content"), ("doc_id", "title", "content"))
ORDERS = Columns("orders", ("order_id", "user_id", "product_id", "quantity", "total", "status", "region",
                            "created_at"),
                 ("order_id", "user_id", "product_id", "quantity", "total", "status", "region", "created_at"))


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _first_non_ascii(data: bytes) -> tuple[int, bytes]:
    """The offset and the bytes of the first run of non-ASCII bytes."""
    start = next(i for i, b in enumerate(data) if b > 127)
    end = next((i for i in range(start, len(data)) if data[i] < 128), len(data))
    return start, data[start:end]


# What the non-ASCII characters of Chinese text are: CJK ideographs and punctuation, fullwidth forms,
# general punctuation and symbols (“” … — ① ×), never Latin, Greek, Cyrillic or Arabic letters.
_CHINESE_TEXT = re.compile("[\u2000-\u2bff\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
_IDEOGRAPH = re.compile("[\u4e00-\u9fff]")   # three UTF-8 bytes each: GBK bytes rarely form them


def _reads_as_chinese(text: str) -> bool:
    return all(ch < "\x80" or _CHINESE_TEXT.match(ch) for ch in text)


def decode_text(path: Path) -> tuple[str, str]:
    """The text of `path` and the encoding it was read in ("UTF-8" or "GB18030"); CatalogError otherwise.

    Valid UTF-8 is taken as UTF-8 when it has Excel's BOM or reads as Chinese text; a file whose bytes read
    as Chinese only in GB18030 (沙滩 in GBK is also valid UTF-8: 'ɳ̲'; Café in UTF-8 is Caf茅 in GBK) is
    refused rather than guessed. A file that is not UTF-8 is read as GB18030 unless it is mostly UTF-8 (a
    damaged file)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError([f"{path}: cannot be read ({exc.strerror})"]) from None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise CatalogError([f"{path}: is UTF-16 text (Excel's \"Unicode text\"), not a CSV file; {SAVE_AS_UTF8}"])
    try:
        text, encoding = data.decode("utf-8-sig"), "UTF-8"
    except UnicodeDecodeError as exc:
        loose = data.decode("utf-8", "replace")
        damaged = loose.count("\ufffd")
        valid = sum(1 for ch in loose if ord(ch) >= 0x800 and ch != "\ufffd")   # 3-byte UTF-8: rare by chance
        if data.startswith(codecs.BOM_UTF8) or valid >= 4 * damaged:   # a damaged UTF-8 file, not GBK
            raise CatalogError([f"{path.name} line {_line_of(data, exc.start)}: a byte that is not UTF-8 in a "
                                f"UTF-8 file; fix that line, or {SAVE_AS_UTF8}"]) from None
        try:
            text, encoding = data.decode("gb18030"), "GB18030"
        except UnicodeDecodeError as gb:
            raise CatalogError([f"{path.name} line {_line_of(data, gb.start)}: the file is neither UTF-8 nor "
                                f"GBK/GB18030 text; {SAVE_AS_UTF8}"]) from None
        log.warning("%s is not UTF-8: read it as GBK/GB18030 (Excel's Chinese \"CSV\"); if names look garbled, "
                    "%s", path.name, SAVE_AS_UTF8)
    else:
        if not data.startswith(codecs.BOM_UTF8) and not _IDEOGRAPH.search(text) and not _reads_as_chinese(text):
            try:
                other = data.decode("gb18030")
            except UnicodeDecodeError:
                other = ""   # not GBK: UTF-8 it is
            if _reads_as_chinese(other) and any(ord(ch) > 127 for ch in other):
                start, run = _first_non_ascii(data)
                raise CatalogError([f"{path.name} line {_line_of(data, start)}: cannot tell whether the file is "
                                    f"UTF-8 or GBK ({run.decode('utf-8', 'replace')!r} or "
                                    f"{run.decode('gb18030', 'replace')!r}); {SAVE_AS_UTF8}"])
    if "\x00" in text:
        raise CatalogError([f"{path.name} line {text.count(chr(10), 0, text.index(chr(0))) + 1}: contains NUL "
                            f"characters, so it is not a text CSV file; {SAVE_AS_UTF8}"])
    return text, encoding


@dataclass
class Table:
    """The data lines of one CSV file: (location, row) with the row keyed by known column names, or None
    for a line with more fields than the header has columns."""

    path: Path
    encoding: str
    rows: list[tuple[str, dict[str, str] | None]]
    parsable: bool = True   # False: a required column is missing or one is there twice; rows not checked


def _header_problems(path: Path, header: list[str], columns: Columns) -> tuple[list[str], bool]:
    """What is wrong with a header, and whether its rows can still be read (all required columns there,
    none twice). An unknown column is an error, but the rows are still checked in the same pass."""
    problems, seen = [], {}
    for position, name in enumerate(header, 1):
        if name and name in seen:
            problems.append(f"column {name!r} appears twice (columns {seen[name]} and {position})")
        seen.setdefault(name, position)
    twice = bool(problems)
    unknown = list(dict.fromkeys(n for n in header if n and n not in columns.known))
    missing = [c for c in columns.required if c not in seen]
    where = f"{path.name} line 1"
    takes = (f" — a {columns.kind} file takes the columns {', '.join(columns.known)} "
             f"(required: {', '.join(columns.required)}{columns.note})")
    if missing:
        problems.append(f"missing column(s): {', '.join(missing)}" + ("" if unknown else takes))
    if unknown:
        said = []
        for name in unknown:
            close = difflib.get_close_matches(name, [c for c in columns.known if c not in seen], n=1, cutoff=0.6)
            said.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        problems.append(f"unknown column(s): {', '.join(said)}{takes}")
    return [f"{where}: {p}" for p in problems], not (missing or twice)


def read_table(path: Path, columns: Columns, problems: list[str]) -> Table | None:
    """Read one CSV file of the kind `columns` describes. Header problems are added to `problems`. None when
    the file cannot be read; a table that is not `parsable` when a required column is missing or a column
    is there twice (its rows still tell which ids the file names)."""
    try:
        text, encoding = decode_text(path)
    except CatalogError as exc:
        problems.extend(exc.problems)
        return None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip().lower() for h in next(reader, [])]
    except csv.Error as exc:
        problems.append(f"{path.name} line 1: unreadable header ({exc})")
        return None
    if not any(header):
        problems.append(f"{path}: is empty; the first line must name the columns: {', '.join(columns.known)}")
        return None
    found, parsable = _header_problems(path, header, columns)
    problems.extend(found)
    rows: list[tuple[str, dict[str, str] | None]] = []
    try:
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue   # a blank line
            where = f"{path.name} line {reader.line_num}"
            if len(fields) > len(header) and any(f.strip() for f in fields[len(header):]):
                rows.append((where, None))
                continue
            unnamed = [i + 1 for i, (name, value) in enumerate(zip(header, fields, strict=False))
                       if not name and value.strip()]
            if unnamed and parsable:
                problems.append(f"{where}: a value in column {unnamed[0]}, which has no name in the header")
            named = {}
            for name, value in zip(header, fields, strict=False):
                if name:
                    named.setdefault(name, value)   # a column there twice: its first value
            rows.append((where, named))
    except csv.Error as exc:
        problems.append(f"{path.name} line {reader.line_num}: unreadable ({exc})")
        return None
    return Table(path, encoding, rows, parsable)
