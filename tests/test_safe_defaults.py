"""Safe by default, through the real commands: a path of one's own that does not exist is refused (never
the demo shop's prices), an imported catalog is searched as the demo one is, each start-up failure is one
line naming the setting, and the console's terminal holds the conversation only."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import prebuilt
from tests.fakes.redis_support import REDIS_TEST_URL
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow   # real bot.py processes
PRODUCTS = ("product_id,product_name,brand,price,stock_quantity,description,specifications,usage,category\n"
            "B1,碳素羽毛球拍,李宁,399,12,轻量进攻型球拍,4U,比赛与训练,羽毛球拍\n"
            "B2,羽毛球训练筒,威克多,89,80,耐打的训练用球,12只装,日常训练,羽毛球\n")


def bot(*args: str, cwd: Path, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in {"BOT_TOKEN", "OPENAI_API_KEY", "REDIS_URL", "DATABASE_PATH", "INDEX_PATH", "AUDIT_DB",
                          "TELEGRAM_API_BASE", "LOG_LEVEL"}}
    return subprocess.run([sys.executable, str(ROOT / "bot.py"), *args], cwd=cwd, env={**clean, **env}, input=stdin,
                          capture_output=True, text=True, timeout=300)


def one_line(result: subprocess.CompletedProcess, setting: str) -> str:
    """The failure is told in one line, the last one, naming the setting; no traceback, no session noise
    (log lines of what went well before it may precede it)."""
    assert result.returncode == 2, result.stderr
    told = [line for line in result.stderr.strip().splitlines() if line.startswith("kefu-bot:")]
    assert len(told) == 1 and result.stderr.strip().endswith(told[0]), result.stderr
    assert told[0].startswith(f"kefu-bot: {setting}: "), result.stderr
    assert "Traceback" not in result.stderr and "Unclosed" not in result.stderr and "ERROR" not in result.stderr
    return told[0]


def test_a_catalog_path_that_does_not_exist_is_refused_never_filled_with_the_demo(tmp_path):
    typo = tmp_path / "srv" / "typo.db"
    for args in ([], ["build-index"], ["console"]):
        line = one_line(bot(*args, cwd=tmp_path, DATABASE_PATH=str(typo)), "DATABASE_PATH")
        assert str(typo) in line and "import-catalog" in line
    assert not typo.exists() and not (tmp_path / "data").exists()


def test_an_index_or_audit_path_of_ones_own_must_exist(tmp_path):
    prebuilt.demo_data(tmp_path / "data")
    line = one_line(bot(cwd=tmp_path, INDEX_PATH=str(tmp_path / "nowhere.index")), "INDEX_PATH")
    assert "build-index" in line
    line = one_line(bot(cwd=tmp_path, AUDIT_DB=str(tmp_path / "no-such-folder" / "audit.db")), "AUDIT_DB")
    assert "no-such-folder" in line


def test_an_imported_catalog_gets_its_index_and_is_searched_like_the_demo(tmp_path):
    (tmp_path / "p.csv").write_text(PRODUCTS, encoding="utf-8")
    shop = tmp_path / "shop" / "badminton.db"
    imported = bot("import-catalog", "p.csv", "--path", str(shop), "--quiet", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert shop.with_suffix(".index").exists() and "embedded 2" in imported.stdout
    again = bot("build-index", "--path", str(shop), "--quiet", cwd=tmp_path)   # up to date: nothing to embed
    assert again.returncode == 0 and "embedded 0, kept 2" in again.stdout
    chat = bot(cwd=tmp_path, stdin="羽毛球拍多少钱\n/quit\n", DATABASE_PATH=str(shop), LOG_LEVEL="INFO")
    assert chat.returncode == 0, chat.stderr
    assert "lexical search only" not in chat.stderr and "399元" in chat.stdout
    lexical = bot(cwd=tmp_path, stdin="/quit\n", DATABASE_PATH=str(shop), SEARCH_MODE="lexical", LOG_LEVEL="INFO")
    assert lexical.returncode == 0 and "SEARCH_MODE=lexical" in lexical.stderr   # only when asked for


def test_the_console_shows_the_conversation_not_the_log(tmp_path):
    prebuilt.demo_data(tmp_path / "data")
    chat = bot(cwd=tmp_path, stdin="足球多少钱\n有优惠吗\n/quit\n")
    assert chat.returncode == 0, chat.stderr
    assert "INFO" not in chat.stderr and "kefu.audit" not in chat.stderr + chat.stdout
    assert sum("客服：" in line for line in chat.stdout.splitlines()) == 3


def test_a_bad_token_is_one_line_and_debug_shows_why(tmp_path):
    line = one_line(bot(cwd=tmp_path, BOT_TOKEN="abc"), "BOT_TOKEN")
    assert "@BotFather" in line and not (tmp_path / "data").exists()   # told before anything is built
    debug = bot("--debug", cwd=tmp_path, BOT_TOKEN="abc")
    assert debug.returncode == 2 and "Traceback" in debug.stderr and "TokenValidationError" in debug.stderr


def test_an_unreachable_bot_api_is_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]   # nothing listens there once the socket is closed
    line = one_line(bot(cwd=tmp_path, BOT_TOKEN="123456:TEST-TOKEN", TELEGRAM_API_BASE=f"http://127.0.0.1:{closed}"),
                    "TELEGRAM_API_BASE")
    assert f"127.0.0.1:{closed}" in line


async def test_a_port_in_use_is_one_line(tmp_path):
    prebuilt.demo_data(tmp_path / "data")
    fake = await FakeTelegram().start()
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen()
    try:
        result = await asyncio.to_thread(bot, cwd=tmp_path, BOT_TOKEN=fake.token, TELEGRAM_API_BASE=fake.url,
                                         REDIS_URL=REDIS_TEST_URL, REDIS_PREFIX=f"kefu-port-{os.getpid()}:",
                                         WEBHOOK_PORT=str(holder.getsockname()[1]))
        assert str(holder.getsockname()[1]) in one_line(result, "WEBHOOK_PORT")
    finally:
        holder.close()
        await fake.stop()
