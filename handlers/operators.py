"""The operators' router: everything in the operators' forum group (relay from a customer's topic,
/close, the 接入 / 结束 buttons) and the operator commands /stats, /chat, /export, /ask in a private
chat or in that group. Only allowlisted users are acted on; anyone else sees no sign that any of it exists:
in the group they are ignored, in a private chat their message goes on to the customers' router."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram import Bot, F, Router
from aiogram.enums import ChatType
from aiogram.exceptions import TelegramBadRequest, TelegramForbiddenError
from aiogram.filters import Command, CommandObject
from aiogram.types import BufferedInputFile, CallbackQuery, Message
from aiogram.utils.chat_action import ChatActionSender

from agent.analytics.labels import flag_label, kind_label, mark_label, reason, status_label
from agent.analytics.stats import compute, format_stats, to_csv
from agent.audit import TurnRecord
from agent.clock import SHANGHAI, shop_iso
from agent.handoff import Claim
from handlers import buttons
from handlers.filters import Inline
from handlers.handoff import Desk
from handlers.replies import send_answer

log = logging.getLogger(__name__)

EXPORT_MAX_DAYS = 90
CHAT_TURNS = 10


@dataclass(frozen=True)
class Operators:
    ids: frozenset[int] = field(default_factory=frozenset)
    chat_id: int | None = None   # the operators' forum supergroup


def build_operator_router(operators: Operators) -> Router:
    router = Router(name="operators")
    is_operator = Inline(F.from_user.id.in_(operators.ids))
    where = Inline((F.chat.type == ChatType.PRIVATE) | (F.chat.id == operators.chat_id))
    for name, handler in (("stats", on_stats), ("chat", on_chat), ("export", on_export), ("ask", on_ask)):
        router.message.register(handler, Command(name), is_operator, where)
    if operators.chat_id is not None:
        router.include_router(_group_router(operators, is_operator))
    return router


async def _not_a_command(message: Message) -> bool:   # a coroutine: aiogram runs it on the loop
    return not (message.text or "").startswith("/")


def _group_router(operators: Operators, is_operator) -> Router:
    """Everything in the operators' group ends here, acted on or not: the customers' router never sees it."""
    group = Router(name="operators-group")
    group.message.filter(Inline(F.chat.id == operators.chat_id))
    group.callback_query.filter(Inline(F.message.chat.id == operators.chat_id))

    @group.message(is_operator, Command("close"), Inline(F.is_topic_message))
    async def on_close(message: Message, desk: Desk) -> None:
        chat = await desk.store.chat_of_topic(message.message_thread_id)
        if chat is not None:
            await desk.close(int(chat), message.from_user.id, "operator")

    @group.message(is_operator, Inline(F.is_topic_message), _not_a_command)
    async def on_reply(message: Message, desk: Desk) -> None:
        await desk.to_customer(message)

    @group.message()
    async def on_anything_else(message: Message) -> None:
        return None   # service messages, other commands, and people who are not operators

    @group.callback_query(is_operator, buttons.Handoff.filter(F.action == "claim"))
    async def on_claim(query: CallbackQuery, callback_data: buttons.Handoff, desk: Desk) -> None:
        result = await desk.claim(callback_data.chat_id, query.from_user)
        await query.answer({Claim.CLAIMED: "已接入", Claim.YOURS: "您已接入",
                            Claim.TAKEN: "已由其他客服接入", Claim.NOT_HANDED_OFF: "会话已结束"}[result])

    @group.callback_query(is_operator, buttons.Handoff.filter(F.action == "close"))
    async def on_close_button(query: CallbackQuery, callback_data: buttons.Handoff, desk: Desk) -> None:
        ended = await desk.close(callback_data.chat_id, query.from_user.id, "operator")
        await query.answer("已结束，交还机器人" if ended else "会话已结束")

    @group.callback_query()
    async def on_other_button(query: CallbackQuery) -> None:
        await query.answer()   # a non-operator's press: nothing happens

    return group


# --- commands ----------------------------------------------------------------------------------------

def _reply_kwargs(message: Message) -> dict:
    return {"thread_id": message.message_thread_id if message.is_topic_message else None}


def _period(argument: str | None, now: datetime) -> tuple[datetime, str] | None:
    arg = (argument or "today").strip().lower()
    local = now.astimezone(SHANGHAI)
    if arg == "today":
        return local.replace(hour=0, minute=0, second=0, microsecond=0), f"今天（{local:%Y-%m-%d}，北京时间）"
    if arg in ("7d", "week"):
        return now - timedelta(days=7), "最近7天"
    return None


STATS_USAGE = "用法：/stats [today|7d]（今天，或最近7天）"
PRIVATE_FIRST = "审计内容只私信发给提问的客服：请先在私聊中给机器人发送 /start，然后再试。"
SENT_PRIVATELY = "已私信发给您。"


async def on_stats(message: Message, bot: Bot, command: CommandObject, audit) -> None:
    period = _period(command.args, datetime.now(UTC))
    if period is None:
        await send_answer(bot, message.chat.id, STATS_USAGE, **_reply_kwargs(message))
        return
    since, label = period
    records = await asyncio.to_thread(audit.since, since) if audit is not None else []
    await send_answer(bot, message.chat.id, format_stats(compute(records), label), **_reply_kwargs(message))


async def _privately(message: Message, bot: Bot, deliver) -> None:
    """Audit content (a customer's messages, the export) goes to the operator who asked, in their private
    chat, never to the whole group (whose members need not be operators); the group gets a short note."""
    if message.chat.type == ChatType.PRIVATE:
        await deliver(message.chat.id, None)
        return
    try:
        await deliver(message.from_user.id, None)
    except (TelegramForbiddenError, TelegramBadRequest):   # the operator never opened a chat with the bot
        await send_answer(bot, message.chat.id, PRIVATE_FIRST, **_reply_kwargs(message))
        return
    await send_answer(bot, message.chat.id, SENT_PRIVATELY, **_reply_kwargs(message))


async def on_chat(message: Message, bot: Bot, command: CommandObject, audit) -> None:
    chat = (command.args or "").strip()
    if not chat.lstrip("-").isdigit():
        await send_answer(bot, message.chat.id, "用法：/chat 会话编号（chat id）", **_reply_kwargs(message))
        return
    records = await asyncio.to_thread(audit.of_chat, chat, CHAT_TURNS * 3) if audit is not None else []
    if not records:
        await send_answer(bot, message.chat.id, f"会话 {chat} 没有审计记录。", **_reply_kwargs(message))
        return

    async def deliver(chat_id: int, thread_id: int | None) -> None:
        await send_answer(bot, chat_id, format_chat(chat, records), thread_id=thread_id)

    await _privately(message, bot, deliver)


def format_chat(chat: str, records: list[TurnRecord]) -> str:
    """A chat's latest records for /chat: each turn with its outcome marks, question and answer; each event.
    Times in Asia/Shanghai; statuses, marks and reasons in Chinese (codes kept beside them)."""
    lines = [f"💬 会话 {chat}：最近 {len(records)} 条记录"]
    for r in records:
        when = shop_iso(r.time)[:19].replace("T", " ")
        if r.is_turn:
            flags = [mark_label(mark) for mark in r.marks if mark != "blocked"]   # the blocked codes instead
            flags += [f"疑似没听懂：{flag_label(f)}" for f in r.flags if f != "fallback"]
            lines.append(f"\n{when} · {status_label(r.status)}"
                         f"{' · 拦截：' + '；'.join(map(reason, r.blocked_codes)) if r.blocked_codes else ''}"
                         f"{' · ' + '、'.join(flags) if flags else ''}")
            lines.append(f"问：{r.message}")
            lines.append(f"答：{r.answer}")
        else:
            extra = {"up": "👍", "down": "👎"}.get(r.value or "", r.direction or r.value or r.reason or "")
            lines.append(f"\n{when} · {kind_label(r.kind)}（{r.kind}） {extra}".rstrip() +
                         (f"\n  {r.text}" if r.text else ""))
    return "\n".join(lines)


async def on_export(message: Message, bot: Bot, command: CommandObject, audit) -> None:
    arg = (command.args or "7").strip()
    if not arg.isdigit() or not 1 <= int(arg) <= EXPORT_MAX_DAYS:
        await send_answer(bot, message.chat.id, f"用法：/export [天数]，1 到 {EXPORT_MAX_DAYS}（默认 7）",
                          **_reply_kwargs(message))
        return
    now = datetime.now(UTC)
    records = await asyncio.to_thread(audit.since, now - timedelta(days=int(arg))) if audit is not None else []
    data = await asyncio.to_thread(to_csv, records)
    name = f"kefu-audit-{now.astimezone(SHANGHAI):%Y%m%d}-{arg}d.csv"

    async def deliver(chat_id: int, thread_id: int | None) -> None:
        await bot.send_document(chat_id, BufferedInputFile(data, filename=name),
                                caption=f"{len(records)} audit records from the last {arg} day(s), UTF-8 CSV",
                                message_thread_id=thread_id)

    await _privately(message, bot, deliver)


ASK_USAGE = "用法：/ask 订单统计问题，例如 /ask 上个月已签收订单一共多少钱，或 /ask 最近7天各地区销售额 饼图"


async def on_ask(message: Message, bot: Bot, command: CommandObject, analyst, audit) -> None:
    """A question about the shop's orders: computed by fixed SQL, every figure checked, a chart as a photo."""
    question = (command.args or "").strip()
    reply = _reply_kwargs(message)
    if not question:
        await send_answer(bot, message.chat.id, ASK_USAGE, **reply)
        return
    async with ChatActionSender.typing(bot=bot, chat_id=message.chat.id, message_thread_id=reply["thread_id"]):
        report = await analyst.ask(question)
    if report.chart is not None:
        await bot.send_photo(message.chat.id, BufferedInputFile(report.chart, filename="chart.png"),
                             caption=report.caption or None, message_thread_id=reply["thread_id"])
        if report.caption != report.answer:
            await send_answer(bot, message.chat.id, report.answer, **reply)
    else:
        await send_answer(bot, message.chat.id, report.answer, **reply)
    if audit is not None:
        audit.record(chat_id=str(message.chat.id), user_id=str(message.from_user.id), message=f"/ask {question}",
                     result=report.as_turn(), update_id=None)
