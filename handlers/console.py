"""The console chat: a thin adapter like the Telegram one — each line goes through `Conversation.handle`
with the chat's session and the reply is rendered by the same `Voice`, so a message sequence gets the
same replies here as in Telegram (the human request, the length and rate limits, "offer a person")."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import TextIO

from agent.conversation import Answer, Conversation, Incoming
from handlers.voice import Voice

BANNER = """kefu-bot 控制台客服（{catalog}：{path}，{products} 件商品）。直接输入问题，例如：
  {examples}
命令：/reset 清空对话记忆 · /trace 切换显示调用轨迹 · /quit 退出"""


async def banner(conversation: Conversation) -> str:
    """Which catalog this console serves (demo or not, its file, its size) and questions to try on it."""
    overview = await conversation.overview()
    return BANNER.format(catalog="演示商品库" if overview.demo else "商品库", path=overview.path,
                         products=overview.products, examples=" / ".join(e.rstrip("？") for e in overview.examples))


async def say_in_console(conversation: Conversation, voice: Voice, text: str, *,
                         chat_id: str = "console", user_id: str = "console") -> tuple[list[str], Answer | None]:
    """One customer line through the conversation: the texts the customer reads, and the answer if any."""
    said = Incoming(chat_id, user_id, text, sent_at=time.time())
    session = await conversation.sessions.open(chat_id)
    reply = await conversation.handle(said, session)
    texts = [outgoing.text for outgoing in voice.render(reply)]
    await conversation.done(said, session, reply)
    return texts, reply if isinstance(reply, Answer) else None


async def run_console(conversation: Conversation, voice: Voice | None = None, *,
                      show_trace: bool = False, user_id: str = "console", chat_id: str = "console",
                      stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Read questions line by line until EOF or /quit; print each reply."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    voice = voice or Voice()

    def say(text: str) -> None:
        stdout.write(text + "\n")
        stdout.flush()

    say(await banner(conversation))
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
        replies, answer = await say_in_console(conversation, voice, text, chat_id=chat_id, user_id=user_id)
        for reply in replies:
            say(f"客服：{reply}")
        if show_trace and answer is not None and answer.result.trace is not None:
            say(json.dumps(answer.result.trace.as_dict(), ensure_ascii=False, indent=1))
