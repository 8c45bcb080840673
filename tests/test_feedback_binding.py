"""👍 / 👎 are bound to the chat and the turn they were shown under (issue 22, item 5): the callback carries
an HMAC of (chat, turn) keyed by the deployment's secret, so a vote naming another chat's turn, or a turn
the bot never answered, is refused politely and counted nowhere — not in the metrics, Redis, the audit
log or /stats — while the real customer still votes, once."""

from __future__ import annotations

import aiohttp
import pytest

from handlers import buttons, texts
from tests.fakes.redis_support import connect
from tests.test_e2e_operators import audit_records, button, wait_audit

OPERATOR = 777
ENV = {"OPERATOR_IDS": str(OPERATOR), "SERVICE_HOURS": "00:00-24:00"}


def test_the_signed_vote_fits_telegrams_limit_and_names_one_chat_and_one_turn():
    biggest = buttons.feedback("123:SECRET", -(2 ** 63), buttons.MAX_UPDATE_ID)
    for row in biggest.inline_keyboard:
        for key in row:
            assert len(key.callback_data.encode()) <= 64, key.callback_data
    up = buttons.Vote.unpack(biggest.inline_keyboard[0][0].callback_data)
    assert buttons.vote_is_genuine("123:SECRET", -(2 ** 63), up)
    assert not buttons.vote_is_genuine("123:SECRET", 5, up)                  # another chat
    assert not buttons.vote_is_genuine("456:OTHER", -(2 ** 63), up)          # another deployment
    moved = up.model_copy(update={"update_id": up.update_id - 1})            # another turn, same signature
    assert not buttons.vote_is_genuine("123:SECRET", -(2 ** 63), moved)
    for forged in ("fb:up:7", "fb:up:7:" + "A" * 15, "fb:up:7:" + "é" * 16, f"fb:up:{2 ** 63}:" + "A" * 16):
        with pytest.raises((TypeError, ValueError)):                         # what the router's filter catches
            buttons.Vote.unpack(forged)


@pytest.mark.slow
async def test_a_cross_chat_or_invented_vote_is_refused_and_counted_nowhere(world):
    fake, bot, workdir = world
    process = bot(**ENV)
    await process.start()
    await fake.say(81, "足球多少钱")
    await fake.wait_replies(81, 1)
    victims = fake.sent[-1]
    await fake.say(82, "篮球多少钱")
    await fake.wait_replies(82, 1)
    own = fake.sent[-1]
    assert victims.chat_id == 81 and own.chat_id == 82
    genuine = button(victims, "👍")

    # chat 82 sends the victim's exact callback data under its own message, then a vote for a turn that
    # does not exist (signed with a guessed secret), then one for its own turn signed for chat 81
    invented = buttons.Vote(value="down", update_id=own_update(own) + 1000,
                            sig=buttons.vote_signature("guess", 82, own_update(own) + 1000)).pack()
    replayed = buttons.Vote(value="down", update_id=own_update(own),
                            sig=buttons.vote_signature(fake.token, 81, own_update(own))).pack()
    for data in (genuine, invented, replayed):
        await fake.press(own, data)
    await fake.wait_for(lambda: len(fake.callback_answers) == 3, what="three refusals")
    assert [a.get("text") for a in fake.callback_answers] == [texts.FEEDBACK_REFUSED] * 3
    assert [b["text"] for b in own.buttons()] == ["👍", "👎"]                # nothing changed under it

    # the real customer votes once; a second press changes nothing
    await fake.press(victims, genuine)
    await fake.press(victims, genuine)
    await fake.wait_for(lambda: len(fake.callback_answers) == 5, what="the customer's two presses answered")
    assert [a.get("text") for a in fake.callback_answers[3:]] == [texts.FEEDBACK_THANKS, texts.FEEDBACK_ALREADY]

    # counted once, for chat 81, everywhere: Redis, the metrics, the audit log (written in order, so the
    # refused votes, pressed before, would be there by now), /stats
    redis = await connect()
    try:
        prefix = process.env["REDIS_PREFIX"]
        counters = {}
        for key in await redis.keys(f"{prefix}counters:*"):
            counters.update({k.decode(): int(v) for k, v in (await redis.hgetall(key)).items()})
        claims = sorted(k.decode().removeprefix(prefix) for k in await redis.keys(f"{prefix}once:feedback:*"))
    finally:
        await redis.aclose()
    assert counters == {"feedback:up": 1}
    assert claims == [f"once:feedback:81:{buttons.Vote.unpack(genuine).update_id}"]
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{process.port}/metrics",
                                                         timeout=aiohttp.ClientTimeout(total=10)) as response:
        metrics = await response.text()
    assert 'kefu_feedback_total{value="up"} 1.0' in metrics and 'kefu_feedback_total{value="down"}' not in metrics
    await wait_audit(workdir, lambda rs: any(r.get("kind") == "feedback" for r in rs), "the customer's vote")
    assert [(r["chat_id"], r["value"]) for r in audit_records(workdir) if r.get("kind") == "feedback"] == [("81", "up")]
    await fake.say(OPERATOR, "/stats")
    (stats,) = await fake.wait_replies(OPERATOR, 1)
    assert "👍 1 · 👎 0" in stats, stats
    code, output = await process.stop()
    assert code == 0, output
    assert "Traceback" not in output


def own_update(sent) -> int:
    """The update id of the turn an answer with feedback buttons was given for."""
    return buttons.Vote.unpack(sent.buttons()[0]["callback_data"]).update_id
