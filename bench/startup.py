"""Start-up benchmark: what one `python bot.py` costs from its start to its first reply, in CPU seconds
(robust on a machine whose speed varies) and wall seconds, against the bare aiogram echo bot
(bench/echo_bot.py) in the same run; and the console chat's start (one question, then /quit).

    python bench/startup.py [--runs 3] [--checkout PATH ...]

Each `--checkout` (default: this one) is measured on its own demo catalog, built first by its own
`bot.py init-db` — e.g. an older commit from `git worktree add /tmp/before <commit>`, for before/after
figures in one run. Needs Redis on 127.0.0.1:6379 (the bot's state; a key prefix of its own)."""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.bot_process import free_port  # noqa: E402
from tests.fakes.redis_support import REDIS_TEST_URL, connect, drop_prefix, unique_prefix  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402

DAY = "2026-11-29"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def first_reply(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Start a Telegram bot process, ask one question at once, wait for the reply, stop it (SIGTERM):
    (CPU seconds of the whole process life, wall seconds to the reply)."""
    fake = await FakeTelegram().start()
    redis, prefix = await connect(), unique_prefix()
    before, started = children_cpu(), time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        env={**env, "BOT_TOKEN": fake.token, "TELEGRAM_API_BASE": fake.url, "REDIS_PREFIX": prefix,
             "WEBHOOK_PORT": str(free_port())})
    try:
        await fake.say(1, "足球多少钱")
        await fake.wait_replies(1, 1, within=300)
        wall = time.monotonic() - started
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 60)
        return children_cpu() - before, wall
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await drop_prefix(redis, prefix)
        await redis.aclose()
        await fake.stop()


def console(checkout: Path, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    before, started = children_cpu(), time.monotonic()
    subprocess.run([sys.executable, str(checkout / "bot.py")], input="足球多少钱\n/quit\n", text=True, cwd=cwd,
                   env={k: v for k, v in env.items() if k not in {"BOT_TOKEN", "REDIS_URL"}},
                   capture_output=True, check=True, timeout=300)
    return children_cpu() - before, time.monotonic() - started


def median(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--checkout", action="append", type=Path, help="a kefu-bot checkout (repeatable)")
    args = parser.parse_args()
    checkouts = [c.resolve() for c in args.checkout or [ROOT]]
    base = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "BOT_MODE", "DATABASE_PATH"}}
    base.update({"KEFU_TODAY": DAY, "REDIS_URL": REDIS_TEST_URL, "OMP_WAIT_POLICY": "PASSIVE"})
    with tempfile.TemporaryDirectory() as tmp:
        echo = median([await first_reply([sys.executable, str(ROOT / "bench" / "echo_bot.py")], base, Path(tmp))
                       for _ in range(args.runs)])
        print(f"echo bot (bare aiogram): {echo[0]:.2f} CPU s, first reply after {echo[1]:.2f} s "
              f"(median of {args.runs})")
        for n, checkout in enumerate(checkouts):
            work = Path(tmp) / f"c{n}"
            (work / "data").mkdir(parents=True)
            env = base
            await asyncio.to_thread(subprocess.run, [sys.executable, str(checkout / "bot.py"), "init-db", "--quiet"],
                                    cwd=work, env=env, check=True, capture_output=True, timeout=600)
            ours = median([await first_reply([sys.executable, str(checkout / "bot.py")], env, work)
                           for _ in range(args.runs)])
            chat = median([await asyncio.to_thread(console, checkout, env, work) for _ in range(args.runs)])
            print(f"{checkout}: python bot.py {ours[0]:.2f} CPU s ({ours[0] / echo[0]:.1f}× echo), first reply "
                  f"after {ours[1]:.2f} s ({ours[1] / echo[1]:.1f}×); console chat {chat[0]:.2f} CPU s, "
                  f"{chat[1]:.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
