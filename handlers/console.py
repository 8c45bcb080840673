"""The console chat: the same agent pipeline, with memory, in a terminal. No Telegram involved."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TextIO

from agent.conversation import Conversation

BANNER = """kefu-bot 控制台客服（demo 商品库）。直接输入问题，例如：
  足球多少钱 / 有优惠吗 / 那买两个呢 / 我准备跑马拉松，需要透气并且能支撑足弓的装备
命令：/reset 清空对话记忆 · /trace 切换显示调用轨迹 · /quit 退出"""


async def run_console(conversation: Conversation, *, show_trace: bool = False, user_id: str = "console",
                      chat_id: str = "console", stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Read questions line by line until EOF or /quit; print each validated answer."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout

    def say(text: str) -> None:
        stdout.write(text + "\n")
        stdout.flush()

    say(BANNER)
    while True:
        stdout.write("\n您：")
        stdout.flush()
        line = await asyncio.to_thread(stdin.readline)
        if not line:
            say("")
            return 0
        text = line.strip()
        if not text:
            continue
        if text in ("/quit", "/exit", "退出"):
            say("客服：再见！")
            return 0
        if text == "/reset":
            await conversation.reset(chat_id)
            say("客服：好的，之前的对话已清空。")
            continue
        if text == "/trace":
            show_trace = not show_trace
            say(f"(trace {'on' if show_trace else 'off'})")
            continue
        result = await conversation.answer(chat_id, user_id, text)
        say(f"客服：{result.answer}")
        await conversation.remember(chat_id, user_id, text, result)
        if show_trace and result.trace is not None:
            say(json.dumps(result.trace.as_dict(), ensure_ascii=False, indent=1))
