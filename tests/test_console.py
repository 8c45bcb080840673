"""The newcomer's first ten seconds: `python bot.py` with no token opens the console on the demo catalog."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.demo import DEMO_DAY

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow   # every test runs a real bot.py process


def run(args, stdin, tmp_path, **extra: str):
    env = {k: v for k, v in os.environ.items() if k not in {"BOT_TOKEN", "OPENAI_API_KEY", "REDIS_URL"}}
    env.update(DATABASE_PATH=str(tmp_path / "data" / "shop.db"), **extra)
    return subprocess.run([sys.executable, str(ROOT / "bot.py"), *args], input=stdin, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=env)


def test_plain_run_opens_the_console_with_memory(tmp_path):
    result = run([], "足球多少钱\n有优惠吗\n那买两个呢\n/quit\n", tmp_path)
    assert result.returncode == 0, result.stderr
    answers = [line for line in result.stdout.splitlines() if "客服：" in line]
    assert len(answers) == 4
    assert "120元" in answers[0] and "9折" in answers[1] and "216元" in answers[2] and "再见" in answers[3]
    assert (tmp_path / "data" / "shop.db").exists() and (tmp_path / "data" / "shop.index").exists()
    assert "Traceback" not in result.stderr


def built_catalog(tmp_path):
    """The demo catalog and index as a first start builds them (test_plain_run_... covers that start),
    copied from the run's one build, as of DEMO_DAY: the bot is started with KEFU_TODAY=DEMO_DAY (TODAY)."""
    from tests.fakes import prebuilt

    prebuilt.demo_data(tmp_path / "data")


TODAY = {"KEFU_TODAY": DEMO_DAY.isoformat()}   # the day the shared demo build is made for


def test_console_reset_and_trace(tmp_path):
    built_catalog(tmp_path)
    result = run(["console", "--show-trace"], "足球多少钱\n/reset\n那买两个呢\n", tmp_path, **TODAY)
    assert result.returncode == 0, result.stderr
    assert '"model_calls": 2' in result.stdout and '"calc:001:1:regular"' in result.stdout
    last = [line for line in result.stdout.splitlines() if "客服：" in line][-1]
    assert "216" not in last   # memory was reset: "那买两个呢" has no product any more


async def test_console_with_a_remote_model_that_fails_degrades_and_hides_the_key(tmp_path):
    import asyncio

    from tests.fakes.openai_server import FakeOpenAI

    await asyncio.to_thread(built_catalog, tmp_path)
    fake = await FakeOpenAI(chat_replies=[500] * 10).start()
    env = {k: v for k, v in os.environ.items() if k not in {"BOT_TOKEN", "REDIS_URL"}}
    env.update({"DATABASE_PATH": str(tmp_path / "data" / "shop.db"), "OPENAI_API_KEY": "sk-VERY-SECRET",
                "OPENAI_BASE_URL": fake.url, "LLM_MAX_RETRIES": "0", **TODAY})
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "bot.py"), "console", cwd=tmp_path, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        output, _ = await asyncio.wait_for(process.communicate("足球多少钱\n".encode()), 300)
    finally:
        await fake.stop()
    text = output.decode()
    assert process.returncode == 0, text
    assert "120元" in text and "HTTP 500" in text          # degraded to the offline model, and logged why
    assert "sk-VERY-SECRET" not in text
    assert fake.requests and fake.requests[0][2]["authorization"] == "Bearer sk-VERY-SECRET"


def test_unreachable_redis_stops_startup_with_one_line(tmp_path):
    built_catalog(tmp_path)
    result = run([], "", tmp_path, **TODAY)   # console: Redis is not needed
    assert result.returncode == 0
    env_run = subprocess.run(
        [sys.executable, str(ROOT / "bot.py")], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "BOT_TOKEN": "1:SECRET", "REDIS_URL": "redis://127.0.0.1:1/0",
             "DATABASE_PATH": str(tmp_path / "data" / "shop.db"), **TODAY})
    assert env_run.returncode == 2
    assert "REDIS_URL: Redis does not answer" in env_run.stderr and "Traceback" not in env_run.stderr
    assert "SECRET" not in env_run.stderr
