"""The newcomer's first ten seconds: `python bot.py` with no token opens the console on the demo catalog."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args, stdin, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"BOT_TOKEN", "OPENAI_API_KEY", "REDIS_URL"}}
    env["DATABASE_PATH"] = str(tmp_path / "data" / "shop.db")
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


def test_console_reset_and_trace(tmp_path):
    result = run(["console", "--show-trace"], "足球多少钱\n/reset\n那买两个呢\n", tmp_path)
    assert result.returncode == 0, result.stderr
    assert '"model_calls": 2' in result.stdout and '"calc:001:1:regular"' in result.stdout
    last = [line for line in result.stdout.splitlines() if "客服：" in line][-1]
    assert "216" not in last   # memory was reset: "那买两个呢" has no product any more
