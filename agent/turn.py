"""The grounded turn: model ⇄ tools within a budget, every submission checked by the validator,
degraded to the offline model (same ledger) and finally to the safe fallback. Validate first, then
send: nothing unvalidated is ever returned."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from collections.abc import Callable, Iterable
from datetime import date
from decimal import Decimal

import aiosqlite

from agent import answers, counts, follow_ups, intent, mentions, pointers, sizes, typed_pinyin
from agent.analytics.analyst import Analyst
from agent.analytics.signals import own_flags, previous_flags
from agent.clock import today_shanghai
from agent.context import TurnContext
from agent.counts import quantities
from agent.loop import GiveUp, Released, ToolLoop, Toolset
from agent.memory import ChatMemory
from agent.mentions import PRICE_WORDS, clause_start, contradicted_phrase, qualifiers, with_ages
from agent.models import ChatModel, ModelError
from agent.offline import OfflineModel
from agent.prompts import build_messages
from agent.routing import Router
from agent.tools import (
    CALLABLE_TOOLS,
    SubmitAnswer,
    ToolRunner,
)
from agent.trace import FALLBACK, Signs, TurnResult, TurnTrace
from agent.vocabulary import Vocabulary
from db.aggregates import OrderAnalytics
from db.catalog import catalog_aliases, catalog_words, fetch_products, fetch_promotions
from db.facts import Quote
from db.pricing import SINGLE_UNITS, measure_word, quote_from
from guardrails.fallback import SAFE_FALLBACK
from guardrails.figures import MEASURE, NUM, QUANTITY, find_mentions
from guardrails.ledger import EvidenceKind, EvidenceLedger
from guardrails.validator import AnswerStatus, Verdict, validate
from retrieval.embedders import EmbeddingError, LocalE5Embedder
from retrieval.passages import PassageSearch
from retrieval.search import ProductSearch
from retrieval.service import load_passages
from retrieval.text import plain_words

log = logging.getLogger(__name__)

# How much closer by meaning (mean z-score) a longer-named product must be to replace the product of the
# exact name written: 给孩子买个足球 → 青少年训练足球 by 0.99, 室内踢的足球 → 室内五人制足球 by 1.48;
# 给我老公买个篮球 (0.0) and 室外打的篮球 (0.36, 篮球 is 室内外通用) keep the name written.
QUALIFIED_MARGIN = 0.4
# How much higher (fused retrieval score) the search must rank another product than the one in focus for a
# described pointer to mean it: 那绑在头上吸汗的那个呢 after 护腕 finds 运动头带 5.7, 护腕 3.8.
DESCRIBED_OTHER_MARGIN = 1.0
# A price asked in so many words (not 还有多少, a stock question).
_PRICE_ASKED = re.compile(f"{PRICE_WORDS}|一共|合计|总共|一起")
# Adding to what is being discussed (再加两套弹力带, 另外再来一个)
_ADDING = re.compile(r"再加|再来|再要|还要|加上|外加|另外再|顺便再|一起买|也(?:来|要|拿|买|加)"
                     r"|再(?:(?:每人|每个人|一人)(?:买|配|拿)?|买|配|拿)"   # (再每人配个水壶, 再买5筒)
                     r"|再给[^，,。？?！!]{1,8}?(?:买|配|拿|来|带|加|要)")   # (再给两个守门员各配一副手套)
# What a message asks of one product (库存够吗 of the one in focus): no need told, the story ends before it
_OF_A_PRODUCT = intent.PRODUCT_ASKS - {intent.Ask.LIST, intent.Ask.COMPARE, intent.Ask.BRAND}
# A total asked of what was priced before (两样加起来呢, 加起来一共多少)
_TOTAL_ASKED = re.compile(r"加起来|加一起|加在一起|一共|总共|合计|总计|共计|加一块|算一起|一起算")


# A having question whose object is a description (有没有护着点的, 有啥能垫一下的): goods asked for by what they do
_HAVING_DESCRIBED = re.compile(r"(?:有没有|有啥|有什么|有无)[^，,。？?！!]{1,12}?的(?:吗|呢|没|么)?[？?]*$")
_POINTER_THEN_DESCRIBED = re.compile(r"^(?:那|这)(?:种|款|个)(?P<d>[^？?，,。]{4,30}?)的(?:呢|嘞|咧)?[？?]*$")   # 那种…的呢
_DESCRIBED_POINTER = re.compile(r"(?<=[\u4e00-\u9fff])的[那这](?:个|款|种|双|只|件|副|套|支|根)")   # 给小孩踢的那个
# Whom goods are for (给我家娃买的，他9岁, 我妈用, 新手): it may qualify the product in focus
_WHOM = re.compile(r"\d+岁|[一二两三四五六七八九十]+岁|年级|孩子|娃|小孩|儿童|儿子|女儿|闺女|宝宝|老人|老爸|老妈|爸|妈|爷爷|奶奶|"
                   r"老婆|老公|媳妇|女朋友|男朋友|女生|男生|新手|初学|入门|专业")
_ONLY = re.compile(r"只看|只要|只想看|只考虑|就看|就要")   # 只看跟踢足球有关的: of those shown, only these
_SOLD_APART = re.compile(r"单[卖买]|单独(?:卖|买|购买|出售)|另外[卖买]|零[卖买]|配件")



# What makes a message no part of a need told over turns: another question (a policy, an order, a person, a wish to
# change the shop's data), a complaint, thanks. A story is read back at most this many messages.
_NO_STORY = frozenset({intent.Ask.POLICY, intent.Ask.ORDER, intent.Ask.SPENDING, intent.Ask.HUMAN, intent.Ask.MODIFY,
                       intent.Ask.INJECTION, intent.Ask.COMPLAINT, intent.Ask.THANKS, intent.Ask.BARGAIN})
_STORY_TURNS = 3

class Agent:
    """Answers one customer message. Dependencies are passed in; nothing here knows Telegram."""

    def __init__(self, conn: aiosqlite.Connection, search: ProductSearch, model: ChatModel | None = None, *,
                 max_model_calls: int = 6, max_rejections: int = 2, turn_budget_seconds: float = 40.0,
                 prepare: bool = True, today: Callable[[], date] | None = None,
                 passages: PassageSearch | None = None, router: Router | None = None):
        self.conn, self.search = conn, search
        self._passages = passages
        self.analyst = Analyst(OrderAnalytics(conn), today or today_shanghai, model,
                               budget_seconds=turn_budget_seconds)
        self.offline = OfflineModel()
        self.model = model or self.offline
        self.loop = ToolLoop(max_model_calls, max_rejections)
        self.turn_budget_seconds = turn_budget_seconds
        self.prepare = prepare   # let search/details carry the verified evidence a price question needs
        self.router = router or Router.load()
        self._vocabulary: Vocabulary | None = None
        self._pinyin: typed_pinyin.Lexicon | None = None
        self._building = asyncio.Lock()   # the first turns arrive together: build each piece once, not per turn

    async def vocabulary(self) -> Vocabulary:
        """The catalog's product names, brands and categories, read once per process."""
        if self._vocabulary is None:   # jieba over every name: off the event loop (20k products take seconds)
            async with self._building:
                if self._vocabulary is None:
                    self._vocabulary = await asyncio.to_thread(Vocabulary.of, await catalog_words(self.conn),
                                                               await catalog_aliases(self.conn))
        return self._vocabulary

    async def spelled_out(self, text: str, vocabulary: Vocabulary) -> str:
        """The message with what it types in pinyin written in Chinese (yu mao qiu pai duo shao qian, hou度); the
        words it may spell are read once per process, at the first message that may need them."""
        if not typed_pinyin.may_be_pinyin(text):
            return text
        if self._pinyin is None:
            async with self._building:
                if self._pinyin is None:
                    shop = {*vocabulary.names, *vocabulary.brands, *vocabulary.categories, *vocabulary.known_words}
                    self._pinyin = await asyncio.to_thread(typed_pinyin.Lexicon.of, frozenset(shop))
        return typed_pinyin.spelled_out(text, self._pinyin)

    async def passages(self) -> PassageSearch:
        """The store-policy search: as given, else over the catalog's chunks with the product search's
        embedder (hybrid; BM25 alone when the product search is lexical), built once."""
        if self._passages is None:
            async with self._building:
                if self._passages is None:
                    self._passages = await load_passages(self.conn, self.search.embedder)
        return self._passages

    async def answer(self, text: str, *, user_id: str, memory: ChatMemory | None = None) -> TurnResult:
        vocabulary = await self.vocabulary()
        text = await self.spelled_out(text, vocabulary)
        text = _order_pointed(text, memory)
        names_goods = vocabulary.pattern is not None and bool(vocabulary.pattern.search(intent.reading(text)))
        report = await self.analyst.for_customer(text, str(user_id), names_goods)   # their own spending, by SQL
        if report is not None:
            return report.as_turn()
        started = time.perf_counter()
        memory = memory or ChatMemory()
        discussed = memory
        trace = TurnTrace(model=self.model.name)
        ledger = EvidenceLedger(vocabulary.brands)
        correcting = bool(memory.turns) and intent.corrects(text)   # 搞错了 我问的是护踝
        labels = await self._labels(text, memory, vocabulary, correcting)
        trace.labels = sorted(labels)
        # what the message means: after a correction's marker, what it says instead (不是拍子，我说的是|球，十个装那个)
        said = self._meant(text, vocabulary) if correcting else text
        asked = intent.read(said, vocabulary, has_focus=bool(memory.focus_product_ids), labels=labels)
        if not correcting and (story := await self._story(text, asked, memory, vocabulary)):
            # 孩子学校开了足球课 / 他今年9岁 / 买哪个球合适: a need told over turns is read as one message
            said = "，".join((*story, text))
            labels = self.router.labels(said, await self._router_vector(said)).labels
            trace.labels = sorted(labels)
            memory = dataclasses.replace(memory, focus_product_ids=[])
            asked = intent.read(said, vocabulary, labels=labels)
            if asked.asks <= {intent.Ask.OFF_TOPIC}:   # (a need told, however chatty: what suits it, recommended)
                asked = dataclasses.replace(asked, asks=frozenset({intent.Ask.LIST}))
        if not correcting and await self._need_apart(said, asked, memory):
            # 他小腿老被人踢到 有没有护着点的 after balls shown: a need the goods in focus do not meet, searched afresh
            memory = dataclasses.replace(memory, focus_product_ids=[])
            asked = intent.read(said, vocabulary, labels=labels)
        if labels and all(label.startswith("policy:") for label in labels) and _taken_up(asked, memory):
            # (电子 of the 电子发票 quoted: no goods, nothing asked of the product in focus)
            asked = dataclasses.replace(asked, goods=(), subject="", near_miss="", asks=asked.asks - intent.PRODUCT_ASKS)
        kinds = {intent.noun_stem(g) for g in asked.goods} if asked.goods and not asked.products else \
            set(intent.kind_written(asked.text, vocabulary, vocabulary.name_endings)) if not asked.products else set()
        kind_only = bool(kinds) and all(len(k) == 1 and k in vocabulary.name_endings for k in kinds)
        shown = memory.focus_product_ids
        if correcting and kind_only and len(shown) == 1 and vocabulary.of_kind(shown[0], min(kinds)):
            # 我是说那个加厚的，做平板支撑用的垫子 after 瑜伽垫: another of the kind shown, the closest to what is said
            asked = await self._of_the_line(said, asked, shown[0], vocabulary, exclude_own=True, kind=min(kinds))
        elif memory.focus_product_ids and correcting and not kind_only:
            # 说错了，是护踝 / 我问的是保温的那款: what it names or describes, not the product just shown (我要拍子不是球
            # keeps it: a kind alone means the one of the shown product's own line)
            memory = dataclasses.replace(memory, focus_product_ids=[])
            asked = intent.read(said, vocabulary, labels=labels)
            if asked.quantity and not (asked.products or asked.goods or asked.category or asked.brand
                                       or asked.reference is not None):
                # 说错了，是两支 / 哦说错了，要三副，我们三个人: the count is corrected, of the goods shown
                memory = dataclasses.replace(memory, focus_product_ids=shown)
                asked = dataclasses.replace(asked, follow_up=True)
            elif len(shown) == 1 and not (asked.products or asked.goods or asked.category or asked.brand):
                # 不对 我说的是给小孩练的那个小一号的 after 足球: described, so one of the shown product's line
                asked = await self._of_the_line(said, asked, shown[0], vocabulary, exclude_own=True)
            elif len(shown) == 1 and asked.brand and asked.reference is not None and not (asked.products or asked.goods):
                # 哦不是，我说的是威尔胜那个室外耐磨的 after 斯伯丁篮球: the brand's one of the kind shown, not its list
                asked = await self._another_brand(dataclasses.replace(asked, asks=asked.asks - {intent.Ask.LIST}),
                                                  dataclasses.replace(memory, focus_product_ids=shown), vocabulary)
        asked = self._kind_beside(asked, vocabulary)
        asked = self._kinds_of_the_sport(said, asked, vocabulary, memory)
        asked = self._another_kind(said, asked, vocabulary, memory, labels)
        asked = self._rest_of_focus(asked, vocabulary, memory)
        asked = self._narrowed(asked, vocabulary, memory)
        asked = await self._own_part(said, asked, vocabulary, memory, labels)
        asked = await self._aspect_of_focus(asked, memory)
        asked = await self._another_name(asked)
        asked = await self._cheaper_than(asked, vocabulary)
        asked = await self._described_pointer(said, asked, vocabulary, memory, labels)
        asked = await self._qualify(said, asked, vocabulary)
        asked = await self._for_whom(said, asked, vocabulary, memory)
        asked = await self._unlike_the_record(asked)
        asked = await self._sized(asked, vocabulary)
        earlier = pointers.pointed_kind(said, vocabulary, memory.focus_product_ids, [t.assistant for t in memory.turns]) \
            if asked.reference is not None and not asked.products else ()
        if earlier:   # 刚才那双鞋: the shoes shown before, not the watch in focus now (of several, the one described)
            meant = (await self._described_of(asked, list(earlier), vocabulary))[0]
            asked = dataclasses.replace(asked, products=(meant,), follow_up=False, goods=(), subject="")
        asked = self._sport_chosen(asked, memory, vocabulary)
        asked = self._each(said, asked, memory, vocabulary)
        asked = self._per_head(said, asked, memory)
        asked = self._together(said, asked, memory, vocabulary)
        asked = self._swapped(said, asked, memory, vocabulary)
        asked = await self._another_brand(asked, memory, vocabulary)
        asked = await self._chosen_for_need(asked, memory)
        asked = await self._resolve(asked, memory, vocabulary)
        asked = await self._count_pairs(asked, memory.focus_product_ids)
        if memory.turns and intent.Ask.SPEC in asked.asks and not answers.attribute_asked(said) \
                and (correcting or asked.follow_up or intent.elliptical(text)):
            # 那健身垫呢 / 不是瑜伽垫 我说的是健身垫 after 瑜伽垫有多厚: the attribute asked before, of what it names now
            asked = dataclasses.replace(asked, carried_aspect=answers.attribute_asked(memory.turns[-1].user))
        if memory.turns and asked.products and not _priced_in(memory.turns[-1].assistant, asked.products, vocabulary) \
                and intent.Ask.SPEC in asked.asks \
                and asked.asks & intent.PRODUCT_ASKS <= {intent.Ask.SPEC, intent.Ask.STOCK, intent.Ask.LIST}:
            # 那表呢 想看配速的 after 跑步腰包: a product first brought up asked of its spec — and what it costs (so is
            # one only named as related before: 那普通的滑板呢，我初学 after 滑雪板 not sold)
            asked = dataclasses.replace(asked, asks=asked.asks | {intent.Ask.PRICE})
        if asked.added and asked.quantity and memory.last_quantity and memory.focus_product_ids \
                and set(asked.products) <= set(memory.focus_product_ids[:1]) \
                and (asked.products or not (asked.goods or asked.subject)):
            # 再加一个 after two: three of what was being bought (再来2件速干tee: two of other goods, on their own)
            more = memory.last_quantity + asked.quantity
            asked = dataclasses.replace(asked, quantity=more, quantities={p: more for p in asked.quantities})
        quantity = asked.quantity
        if quantity is None and asked.follow_up:
            quantity = memory.last_quantity
        runner = ToolRunner(self.conn, self.search, ledger, str(user_id), quantity=quantity,
                            first_purchase=asked.first_purchase, prepare=self.prepare,
                            passages=await self.passages())

        def context() -> TurnContext:
            return TurnContext(said, str(user_id), list(memory.focus_product_ids), quantity, asked.first_purchase,
                               intent=asked)

        toolset = Toolset(CALLABLE_TOOLS, runner.run)   # the core tools and the promotion helpers

        def check(args: SubmitAnswer) -> Verdict:
            return validate(text, args.answer, args.citation_ids, ledger, args.status)

        released: Released | None = None
        deadline = started + self.turn_budget_seconds
        if self.model is not self.offline:
            try:
                async with asyncio.timeout(self.turn_budget_seconds):
                    released = await self.loop.run(self.model, build_messages(text, memory), toolset, check, ledger,
                                                   trace, context())
            except (ModelError, GiveUp, TimeoutError) as exc:
                reason = "turn budget spent" if isinstance(exc, TimeoutError) else str(exc)
                log.warning("remote model gave no releasable answer (%s): degrading to the offline model", reason)
                trace.degraded, trace.degraded_reason = True, reason
        if released is None:
            try:
                remaining = max(deadline - time.perf_counter(), 5.0)
                async with asyncio.timeout(remaining):
                    released = await self.loop.run(self.offline, build_messages(text, memory), toolset, check,
                                                   ledger, trace, context())
            except (ModelError, GiveUp, TimeoutError) as exc:
                log.error("offline model gave no releasable answer (%s): safe fallback", exc)
        if released is None:
            trace.fallback = True
            released = Released(SAFE_FALLBACK, [], FALLBACK)
        trace.status = released.status
        trace.citations = released.citations
        trace.file_ledger(ledger)
        trace.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        focus, last_quantity = self._focus(released, ledger)
        if last_quantity is None and focus and focus == discussed.focus_product_ids:
            last_quantity = discussed.last_quantity   # 库存够吗 after 12 of them priced: still the 12 discussed
        return TurnResult(released.answer, released.status, released.citations, focus, last_quantity, trace)

    async def signs(self, text: str, result: TurnResult, earlier: list[str]) -> Signs:
        """The turn's signs of a misunderstanding for the audit; `earlier`: the customer's previous messages."""
        return await self.signs_of(text, result.answer, bool(result.trace and result.trace.fallback), earlier)

    async def signs_of(self, text: str, answer: str, fallback: bool, earlier: list[str]) -> Signs:
        """The same from the answer's text and whether it was the safe fallback (what a turn process is sent)."""
        return Signs(await own_flags(text, answer, fallback, self.search),
                     await previous_flags(text, earlier, getattr(self.search, "query_vector", None)))

    @staticmethod
    def _meant(text: str, vocabulary: Vocabulary) -> str:
        """What a correction says is meant instead, when it names it (不是拍子，我说的是|球，十个装那个; 说错了，|是两支);
        else the whole message, whose description says which (你说的是那个塑料的吧？我问的是保温的那款)."""
        part = intent.corrected_part(text)
        probe = intent.read(part, vocabulary)
        names = probe.products or probe.goods or probe.category or probe.brand or probe.quantity \
            or intent.kind_written(probe.text, vocabulary, vocabulary.name_endings)
        return part if names else text

    async def _story(self, text: str, asked: intent.Intent, memory: ChatMemory,
                     vocabulary: Vocabulary) -> tuple[str, ...]:
        """The messages just before this one that told the need and named no product (想给我爸挑个礼物 / 他退休了天天去
        爬山), when this one goes on telling it or asks for goods it does not name (有没有能帮他下山省点劲的): they are
        read with it as one message. None when it names a product or brand, points at one shown, or asks another
        thing (a policy, an order); a question about goods (护具都有啥) was answered, and ends the story."""
        if not memory.turns or asked.products or asked.brand or asked.reference is not None \
                or intent.refers_back(text) or asked.asks & _NO_STORY:
            return ()
        telling = asked.asks <= {intent.Ask.OFF_TOPIC, intent.Ask.LIST}
        which = re.search(f"哪一?[{intent.MEASURE_WORDS}](.)", asked.text)   # 哪双鞋好: which of a kind
        kind = asked.goods or intent.kind_written(asked.text, vocabulary, vocabulary.name_endings) \
            or bool(which) and which.group(1) in vocabulary.name_endings
        if not (telling or asked.describes_need or kind) or asked.follow_up and not (telling or kind):
            return ()   # (现在买有什么赠品吗 after a watch: a question about the one in focus)
        last = memory.turns[-1].assistant
        if any(q in last for q in answers.WHICH_QUESTIONS) or answers.BROWSE_QUESTION in last:
            return ()   # (the reply to "which product?" is read with the question it answers)
        told: list[str] = []
        for turn in reversed(memory.turns[-_STORY_TURNS:]):
            earlier = intent.read(turn.user, vocabulary)
            asked_of_goods = bool(earlier.category or earlier.names_goods) \
                and bool(earlier.asks & intent.PRODUCT_ASKS or intent.asks_for_goods(turn.user))
            if earlier.products or earlier.brand or asked_of_goods or intent.refers_back(turn.user) \
                    or earlier.asks & _NO_STORY or earlier.asks & _OF_A_PRODUCT \
                    or any(intent.LABEL_ASKS.get(label) in _NO_STORY or label.startswith("policy:") for label
                           in self.router.labels(turn.user, await self._router_vector(turn.user)).labels):
                break
            told.insert(0, turn.user)
        return tuple(told)

    async def _labels(self, text: str, memory: ChatMemory, vocabulary: Vocabulary,
                      correcting: bool) -> frozenset[str]:
        """What the message asks, by the router; a short elliptical follow-up (那买两个呢, 要是新客呢) about
        the product in focus asks what the previous message asked, plus anything it asks itself; so does a
        correction (`correcting`: 搞错了 我问的是护踝), of what it names."""
        text = intent.typed_spellings(text)   # 瑜伽服有木有 asks what 瑜伽服有没有 asks
        labels = self.router.labels(text, await self._router_vector(text)).labels
        last = memory.turns[-1] if memory.turns else None
        asked_which = last is not None and any(q in last.assistant for q in answers.WHICH_QUESTIONS)
        if asked_which and not intent.refers_back(text):
            previous = self.router.labels(last.user).labels
            if follow_ups.names_only(text, vocabulary) and follow_ups.answering_which(frozenset(), previous):
                labels = frozenset()   # 羽毛球网架: only the product; what it asks is what was asked before
            # after the shop's categories were offered, 乒乓球相关的 picks one to list
            listing = frozenset({"listing"}) if answers.BROWSE_QUESTION in last.assistant else frozenset()
            return follow_ups.answering_which(labels, previous) | listing
        if last is not None and correcting:
            # 不是手表，我问的是跑步腰包: what was asked before, of another product; no complaint, no greeting
            previous = self.router.labels(last.user).labels
            return follow_ups.carry_over(labels & follow_ups.CARRIED, previous)
        bare = follow_ups.bare_follow_up(text, vocabulary)
        if bare or intent.refers_back(text) or memory.focus_product_ids and intent.leans_first(text):
            # what the message before asked (n-grams: no second embedding); its product questions carry only to a focus
            asked_before = self._asked_before(memory)
            previous = asked_before if memory.focus_product_ids else frozenset()
            if bare:
                labels = frozenset()   # 那乒乓球拍呢: only what the conversation asked (or its price), nothing of its own
            # (a product still in focus from before a policy question does not make 要是漏气呢 a product question)
            about_goods = bool(memory.focus_product_ids) and bool(asked_before & follow_ups.CARRIED)
            if last is not None and answers.quotes_policy(last.assistant) \
                    and (policies := follow_ups.policy_carried(text, labels, asked_before, about_goods)):
                return policies   # 那要是支付宝付的呢 after a refund question: that policy, of what it names now
            # (那要两个 after 换个小点的 answered with a product: no policy was quoted to carry)
            labels = follow_ups.carry_over(labels, previous, text)   # nothing discussed: a product question to ask about
        elif memory.turns and (before := frozenset(label for label in self._asked_before(memory)
                                                   if label.startswith("policy:"))):
            if _taken_up(intent.read(text, vocabulary), memory):
                return before   # 开出来是纸质的还是电子的 after the invoice policy: its 电子发票, no 电子 goods
            if labels and all(label.startswith("policy:") for label in labels) and not intent.asks_anything(text):
                labels = before   # 我是用微信付的 after 退款多久到账: a fact told for that policy, no question of its own
            elif answers.quotes_policy(memory.turns[-1].assistant) and not intent.asks_anything(text) \
                    and _tells_a_fact(text, vocabulary):
                # 我在乌鲁木齐 after 几天能到, 签收都20天了 after 能开发票吗: the customer's own fact for the policy just
                # quoted, whatever the router makes of a message that asks nothing (a complaint still heard as one)
                labels = before | (labels & {"complaint"})
        return labels

    def _asked_before(self, memory: ChatMemory) -> frozenset[str]:
        """What the previous message asked (n-grams: no second embedding) — with the policy it carried when it only
        told a fact for it (我是用微信付的 after 退款多久到账: the refund's timing) or was elliptical itself."""
        if not memory.turns:
            return frozenset()
        last = memory.turns[-1].user
        labels = self.router.labels(last).labels
        if len(memory.turns) < 2:
            return labels
        before = {label for label in self.router.labels(memory.turns[-2].user).labels if label.startswith("policy:")}
        if labels and all(label.startswith("policy:") for label in labels) and not intent.asks_anything(last):
            return frozenset(before) or labels   # (a fact told asks nothing of its own: 我是用支付宝付的 is no payment question)
        if intent.elliptical(last):
            # (…or was itself elliptical: 那要是质量有问题呢 after 多久内能退 asked the return policy again)
            labels |= before
        return labels

    async def _router_vector(self, text: str):
        """The message's vector for the router: the product search's own when it uses the bundled model the
        router was trained on (one embedding serves both); otherwise none, and the router reads n-grams."""
        embedder = self.search.embedder
        if embedder is None or embedder.name != LocalE5Embedder.name:
            return None
        try:
            return await self.search.query_vector(text[:200])
        except EmbeddingError as exc:
            log.warning("no vector for the router (%s): n-grams only", exc)
            return None

    async def _qualify(self, text: str, asked: intent.Intent, vocabulary: Vocabulary) -> intent.Intent:
        """适合小孩踢的足球: of the products whose names end with the word written, the one the embedder
        finds closest — to the qualifying words with the name, and to the whole message (its vector is
        the router's, already computed), on average — when clearly closer than the product of that name."""
        for own, (query, *options) in pointers.qualified(asked, vocabulary).items():
            phrase = await self.search.closeness(with_ages(query)[:200], options)
            whole = await self.search.closeness(with_ages(text)[:200], options)
            close = {pid: (phrase[pid] + whole[pid]) / 2 for pid in options if pid in phrase and pid in whole}
            if (best := _clearly_closer(close, own)) is not None:
                asked = intent.replace_product(asked, own, best)
        return asked

    async def _for_whom(self, text: str, asked: intent.Intent, vocabulary: Vocabulary,
                        memory: ChatMemory) -> intent.Intent:
        """给我家娃买的，他9岁 after 足球: whom it is for qualifies the product in focus as it would the name written
        (适合小孩踢的足球) — of the products whose names end with its name (青少年训练足球), the one the embedder finds
        closest to the message with that name, when clearly closer than the product in focus."""
        focus = memory.focus_product_ids
        if len(focus) != 1:
            return asked
        whom = asked.follow_up and _WHOM.search(asked.text)
        # …so does a description of the kind that meant the focus (那适合室外水泥地的球呢 after 篮球: 室外耐磨篮球)
        kind = intent.kind_written(asked.text, vocabulary, vocabulary.name_endings)
        described = (asked.products == (focus[0],) or asked.follow_up and not asked.products) and not asked.named \
            and bool(kind) and f"的{kind[0]}" in asked.text and vocabulary.of_kind(focus[0], kind[0]) \
            and bool(pointers.pointer_description(asked.text))   # (…的球: the kind the focus is of, described)
        if not (whom or described):
            return asked
        return await self._of_the_line(text, asked, focus[0], vocabulary)

    async def _of_the_line(self, text: str, asked: intent.Intent, shown: str, vocabulary: Vocabulary,
                           exclude_own: bool = False, kind: str = "") -> intent.Intent:
        """Of the product shown and those whose names end with its name (足球: 青少年训练足球, 室内五人制足球), the one
        the embedder finds closest to the message with that name, when clearly closer than the one shown; with
        `exclude_own` (a correction: the one shown is not meant) the closest of the others, whatever the margin —
        of the `kind` written, when one is (垫子: every mat, whatever its category)."""
        name = vocabulary.full_name(shown)
        others = vocabulary.line_of(shown)
        if kind:
            others = sorted(vocabulary.products_of_kind(kind) - {shown})
        elif exclude_own and name:   # a correction: any of its kind filed with it (越野的那款 after 跑步鞋: 越野跑鞋 too)
            kind, filed = vocabulary.kind_of(shown)
            others = sorted(set(others) | {p for p in vocabulary.products_of_kind(kind)
                                           if p != shown and vocabulary.category_by_product.get(p) == filed})
        if not others:
            return asked
        close = await self.search.closeness(f"{with_ages(text)[:150]} {name}", [shown, *others])
        if (best := _clearly_closer(close, shown, exclude_own=exclude_own)) is not None:
            return dataclasses.replace(asked, products=(best,), follow_up=False, reference=None, goods=(), subject="",
                                       near_miss="", related=("", ""), foreign_qualifier="")
        return asked

    @staticmethod
    def _sport_chosen(asked: intent.Intent, memory: ChatMemory, vocabulary: Vocabulary) -> intent.Intent:
        """那还是打羽毛球吧 after 羽毛球拍 and 网球拍 were compared: of the products shown, the one of the sport played."""
        focus = memory.focus_product_ids
        if asked.products or asked.goods or len(focus) < 2:
            return asked
        chosen = [pid for pid in focus if (category := vocabulary.category_by_product.get(pid))
                  and re.search(f"[{intent.PLAY_VERBS}]{re.escape(category)}", asked.text)]
        if len(chosen) != 1:
            return asked
        return dataclasses.replace(asked, products=(chosen[0],), follow_up=False, reference=None,
                                   quantities={chosen[0]: asked.quantity} if asked.quantity else {})

    @staticmethod
    def _each(text: str, asked: intent.Intent, memory: ChatMemory, vocabulary: Vocabulary) -> intent.Intent:
        """泳镜多少钱 / 泳帽呢 / 那各来一个: one of each product just discussed (or the count written), priced
        together as a basket."""
        if asked.products or not memory.turns:
            return asked
        each = pointers.each_of_earlier(text, vocabulary, [t.assistant for t in memory.turns], memory.focus_product_ids)
        if not each:
            return asked
        if intent.Ask.STOCK in asked.asks and not _PRICE_ASKED.search(asked.text):   # 两样都还有货吗: each one's stock
            return dataclasses.replace(asked, products=each, follow_up=False, reference=None, goods=(), subject="",
                                       asks=asked.asks - {intent.Ask.BASKET, intent.Ask.COMPARE})
        return dataclasses.replace(asked, products=each, follow_up=False, reference=None, goods=(), subject="",
                                   quantities={p: asked.quantity or 1 for p in each},
                                   asks=(asked.asks - {intent.Ask.COMPARE}) | {intent.Ask.BASKET})

    @staticmethod
    def _kind_beside(asked: intent.Intent, vocabulary: Vocabulary) -> intent.Intent:
        """那球拍和乒乓球各多少钱: a kind several products are (球拍), asked apart beside a product named, is the one of
        them in the named product's category (乒乓球拍)."""
        if not asked.products or len(asked.parts) < 2:
            return asked
        categories = {vocabulary.category_by_product.get(pid) for pid in asked.products}
        added: list[str] = []
        for part in asked.parts:
            probe = intent.read(part, vocabulary)
            if probe.products or len(probe.goods) != 1:
                continue
            kind = {pid for pid in vocabulary.ending_with(intent.noun_stem(probe.goods[0]))
                    if vocabulary.category_by_product.get(pid) in categories}
            if len(kind) == 1 and not kind <= set(asked.products):
                added.append(kind.pop())
        if not added:
            return asked
        return dataclasses.replace(asked, products=(*added, *asked.products))

    @staticmethod
    def _kinds_of_the_sport(text: str, asked: intent.Intent, vocabulary: Vocabulary,
                            memory: ChatMemory) -> intent.Intent:
        """公司团建打羽毛球，要4支拍子、一个网架、3筒球: goods listed by their kind (拍子, 球) in a message that names one
        sport — or after goods of one sport were shown (那就一支拍子加两罐球 after 网球拍 and 网球) — are that sport's
        (羽毛球拍, 羽毛球), each at the count written beside it, when the products the reader found are among them."""
        if asked.asks - intent.PRODUCT_ASKS or intent.Ask.LIST in asked.asks or asked.ruled_out \
                or asked.max_price is not None or vocabulary.category_pattern is None:
            return asked   # (尤尼克斯的羽毛球用品，鞋子不要，350以内的: a list narrowed, nothing bought)
        folded = intent.reading(text)
        pieces = [piece for piece in _LISTED.split(folded) if piece.strip()]
        if len(pieces) < 2:
            return asked   # (one piece: nothing listed — no piece read again)
        sports = {vocabulary.category_of.get(m.group(), m.group()) for m in vocabulary.category_pattern.finditer(folded)} \
            or {vocabulary.category_by_product.get(pid) for pid in memory.focus_product_ids}
        if len(sports) != 1 or None in sports:
            return asked
        sport = sports.pop()
        listed: dict[str, int] = {}
        by_kind = 0
        for piece in pieces:
            probe = intent.read(piece, vocabulary)
            if len(probe.products) == 1 and probe.products[0] in asked.products \
                    and (probe.quantity or not _SPORT_PLAYED.search(piece)):
                pid = probe.products[0]   # (named: as the whole message reads it — 羽毛球俱乐部, 周末打网球 name no goods)
            elif not probe.products and len(probe.goods) == 1:
                kind = {p for p in vocabulary.ending_with(intent.noun_stem(probe.goods[0]))
                        if vocabulary.category_by_product.get(p) == sport}
                if len(kind) != 1:
                    continue
                pid, by_kind = kind.pop(), by_kind + 1
            else:
                continue
            listed[pid] = listed.get(pid, 0) + (probe.quantity or 1)
        if len(listed) < 2 or not by_kind or not set(asked.products) <= set(listed):
            return asked
        first = next(iter(listed.values()))
        return dataclasses.replace(asked, products=tuple(listed), quantities=listed, quantity=first, goods=(),
                                   subject="", category=None, near_miss="")

    @staticmethod
    def _swapped(text: str, asked: intent.Intent, memory: ChatMemory, vocabulary: Vocabulary) -> intent.Intent:
        """那杯子换成普通运动水壶 after a basket priced: the basket again, the goods of that kind (杯子: 保温运动水杯)
        replaced by the one named, at the same count."""
        swap = _SWAP.search(intent.reading(text))
        if swap is None or len(asked.products) != 1 or not memory.turns:
            return asked
        basket = answers.counts_priced(memory.turns[-1].assistant, vocabulary)
        new = asked.products[0]
        kind = intent.noun_stem(re.sub(r"^(?:那|把|这|那个|这个)", "", swap.group("old")))
        old = [pid for pid in basket if kind and vocabulary.of_kind(pid, kind[-1:])]
        if len(basket) < 2 or new in basket or len(old) != 1:
            return asked
        quantities = {(new if pid == old[0] else pid): n for pid, n in basket.items()}
        return dataclasses.replace(asked, products=tuple(quantities), quantities=quantities, quantity=None,
                                   asks=asked.asks | {intent.Ask.BASKET})

    @staticmethod
    def _per_head(text: str, asked: intent.Intent, memory: ChatMemory) -> intent.Intent:
        """再每人配个水壶 after 班上20个小孩 每人一根跳绳: what each person gets, for the people told before."""
        each = counts.each_gets(text)
        if each is None or not asked.products:
            return asked
        people = next((n for turn in reversed(memory.turns) if (n := counts.heads(turn.user))), None)
        if people is None:
            return asked
        return dataclasses.replace(asked, quantity=people * each, quantities={p: people * each for p in asked.products})

    @staticmethod
    def _together(text: str, asked: intent.Intent, memory: ChatMemory, vocabulary: Vocabulary) -> intent.Intent:
        """两样加起来呢 / 加起来一共多少 after things priced one by one (or as a basket): all of them, each at the count
        it was priced for, as one basket — the latest answer's, then the one before when it priced one thing."""
        if asked.products or asked.goods or asked.category or asked.reference is not None or not memory.turns \
                or asked.quantity is not None or not _TOTAL_ASKED.search(text):   # (买三个一共多少: three of the one)
            return asked
        priced: dict[str, int] = {}
        for turn in reversed(memory.turns[-2:]):
            found = answers.counts_priced(turn.assistant, vocabulary)
            if not found:
                break
            priced = {**found, **priced}
            if len(priced) >= 2:
                break
        if len(priced) < 2:
            return asked
        products = tuple(priced)   # (in the order they were priced)
        return dataclasses.replace(asked, products=products, quantities={p: priced[p] for p in products},
                                   follow_up=False, asks=(asked.asks - {intent.Ask.COMPARE}) | {intent.Ask.BASKET})

    async def _chosen_for_need(self, asked: intent.Intent, memory: ChatMemory) -> intent.Intent:
        """我主要做平板支撑 膝盖不太好 选哪个 after two compared: of those, the one the search ranks first for the need
        told, recommended (and in focus after); 哪个便宜点 with no need told: those shown, compared again."""
        shown = memory.focus_product_ids
        if asked.products or not asked.follow_up or len(shown) < 2 or intent.Ask.COMPARE not in asked.asks \
                or asked.reference is not None:   # (便宜点的那个: a pointer)
            return asked
        if not asked.describes_need:   # 哪个便宜点 after two compared: those two, compared again (not 那买两个呢)
            return dataclasses.replace(asked, products=tuple(shown), follow_up=False) \
                if len(shown) <= 3 and "哪" in asked.text else asked
        found = [c.product_id for c in (await self.search.find(asked.text, top_k=10)).candidates]
        best = next((pid for pid in found if pid in shown), None)
        if best is None:
            return asked
        return dataclasses.replace(asked, products=(best,), follow_up=False,
                                   asks=(asked.asks - {intent.Ask.COMPARE}) | {intent.Ask.PRICE})

    async def _own_part(self, text: str, asked: intent.Intent, vocabulary: Vocabulary, memory: ChatMemory,
                        labels: frozenset[str]) -> intent.Intent:
        """篮球打气筒 is another thing; 弹力带阻力, 篮球半价 are the product's own: a word written after a product's
        name that its record (description, specifications, usage, promotions) holds is a part or aspect of it,
        so the message is read again with that word kept to the product."""
        if not asked.near_miss or len(asked.products) != 1:
            return asked
        name = next((n for n in asked.named if asked.near_miss.startswith(n)), "")
        rest = asked.near_miss[len(name):].removeprefix("的")
        if not name or len(rest) < 2 or _SOLD_APART.search(asked.text):   # 滑板轮子能单买吗: the wheels as goods
            return asked
        pid = asked.products[0]
        product = (await fetch_products(self.conn, [pid])).get(pid)
        if product is None:
            return asked
        if rest not in answers.record_text(product):   # its promotions read only when the record itself is silent
            promotions = await fetch_promotions(self.conn, [pid])
            if rest not in answers.record_text(product, *(p.promotion_text for p in promotions)):
                return asked
        return intent.read(text, vocabulary, has_focus=bool(memory.focus_product_ids), labels=labels,
                           own=frozenset({rest}))

    async def _aspect_of_focus(self, asked: intent.Intent, memory: ChatMemory) -> intent.Intent:
        """拍面多大 after 网球拍: goods the record of the product in focus holds (its 拍面) are an aspect of it, asked
        about, not other goods (never "not sold")."""
        focus = memory.focus_product_ids
        words = asked.goods or intent.had_asked(asked.text)   # (有反光没: what it may have, no goods named)
        if asked.products or len(focus) != 1 or not words or asked.category or asked.brand \
                or asked.reference is not None:   # (水泥地上打的那个呢: a description of which one, not a part)
            return asked
        product = (await fetch_products(self.conn, focus[:1])).get(focus[0])
        record = answers.record_text(product) if product is not None else ""
        attribute = answers.attribute_asked(asked.text)   # 能装多少东西: 能装 is how the capacity is asked
        if product is None or not all(len(g) >= 2 and (g in record or intent.noun_stem(g) in record or g in attribute)
                                      for g in words):   # (盒子: 泳镜盒)
            return asked
        return dataclasses.replace(asked, products=(focus[0],), goods=(), subject="", near_miss="", related=("", ""),
                                   follow_up=True, asks=asked.asks | {intent.Ask.SPEC})

    @staticmethod
    def _rest_of_focus(asked: intent.Intent, vocabulary: Vocabulary, memory: ChatMemory) -> intent.Intent:
        """What a message that names nothing but what it rules out asks: the others of those just shown (泡沫轴用不上，
        另外两样多少钱), or when the one shown is ruled out (斯伯丁的不要，换个牌子的有没有 after the Spalding ball) the
        goods of its kind, listed without it."""
        if not asked.ruled_out or asked.products or asked.goods or asked.category or intent.Ask.LIST not in asked.asks:
            return asked
        ruled = [pid for pid in memory.focus_product_ids if intent.excluded(pid, asked.ruled_out, vocabulary)]
        rest = tuple(pid for pid in memory.focus_product_ids if pid not in ruled)
        if ruled and rest:   # 帐篷跟登山鞋我都有了，剩下的多少钱 (after four shown): the others shown, each priced
            return _priced(asked, rest)
        kind, category = vocabulary.kind_of(ruled[0]) if ruled else ("", None)
        if not kind:
            return asked
        return dataclasses.replace(asked, goods=(kind,), subject=kind, kind=kind, category=category, follow_up=False,
                                   reference=None)

    @staticmethod
    def _narrowed(asked: intent.Intent, vocabulary: Vocabulary, memory: ChatMemory) -> intent.Intent:
        """800以下的有哪几双, 只看跟踢足球有关的 after a list: those shown that meet the budget or are of the category
        (the budget is read against what each costs now, as for products named with a budget)."""
        shown = memory.focus_product_ids
        if len(shown) < 2 or asked.products or asked.goods or asked.brand or asked.ruled_out:
            return asked
        if (asked.max_price is not None or asked.min_price is not None) and not asked.category:
            return dataclasses.replace(asked, products=tuple(shown), follow_up=False, reference=None)
        if asked.category and _ONLY.search(asked.text):
            kept = tuple(pid for pid in shown if vocabulary.category_by_product.get(pid) == asked.category)
            if kept:
                return _priced(asked, kept)
        return asked

    @staticmethod
    def _another_kind(text: str, asked: intent.Intent, vocabulary: Vocabulary, memory: ChatMemory,
                      labels: frozenset[str]) -> intent.Intent:
        """包多少钱 after a racket: a kind written as one character that the product in focus is not of names other
        goods — the one of that kind discussed before (鞋还有几双 after 足球鞋, then 护腿板) or of the focus's own
        line (那球呢 after 乒乓球拍: 乒乓球), else that kind afresh (bags), so the message is no follow-up; 包还有吗
        after 双肩包 stays one. The kind written alone as the goods (拍子拿两个多少钱) means the one in focus or
        discussed the same way, when there is one."""
        if memory.turns and not asked.products and (said := pointers.category_as_kind(asked.text, vocabulary)):
            # 衣服呢 after 瑜伽垫: a category word said as a kind of goods in a follow-up means the one of its line
            if (meant := pointers.meant_by_kind(said, vocabulary, memory.focus_product_ids,
                                                [t.assistant for t in memory.turns])) is not None:
                return dataclasses.replace(asked, products=(meant,), category=None, follow_up=False,
                                           asks=asked.asks - {intent.Ask.LIST})
        if memory.turns and not asked.products and (joined := pointers.kinds_joined(asked.text, vocabulary)):
            # 那拍子和球分别多少钱 after 乒乓球: each kind the one in focus or discussed, as one kind alone is
            meant = [pointers.meant_by_kind(kind, vocabulary, memory.focus_product_ids, [t.assistant for t in memory.turns])
                     for kind in joined]
            if all(meant) and len(set(meant)) == len(meant):
                return dataclasses.replace(asked, products=tuple(meant), follow_up=False, goods=(), subject="",
                                           parts=())
        # (a character ending one product's name will do in a conversation: 砖呢 after 瑜伽垫, 帽子 after 泳帽)
        # (…or names nothing else in a conversation with nothing in focus: 想再配个砖 after an order)
        among = len(memory.focus_product_ids) > 1 and not (asked.products or asked.goods or asked.category)
        kind = intent.kind_written(asked.text, vocabulary, vocabulary.name_endings) if asked.follow_up or among or (
            memory.turns and not memory.focus_product_ids and not (asked.products or asked.goods or asked.category)) \
            else ()
        # 拍子拿两个多少钱 in a conversation: the kind as the goods, written alone (拍子, 鞋), means one discussed too
        bare = bool(memory.turns) and not kind and not asked.products and asked.goods == (asked.subject,) \
            and len(asked.subject) <= 2 and intent.noun_stem(asked.subject) in vocabulary.name_endings \
            and not (asked.reference is not None and sum(vocabulary.of_kind(pid, intent.noun_stem(asked.subject))
                                                         for pid in memory.focus_product_ids) > 1)
        # (小孩用的那个球 after three balls shown: the one of them it describes, by the pointer)
        kind = (intent.noun_stem(asked.subject),) if bare else kind
        if not kind:
            return asked
        of_kind = [pid for pid in memory.focus_product_ids if vocabulary.of_kind(pid, kind[0])]
        if among and not asked.follow_up and len(of_kind) != 1:
            return asked   # (球是多少速的 after a racket and balls priced: the balls; 鞋 of three shoes: none of them)
        if of_kind:   # the product in focus is of that kind: it is the one meant (球买三盒呢 after 拍子和球: the balls)
            one = bare or len(memory.focus_product_ids) > 1 and not asked.ruled_out   # (球不用了: ruled out, not meant)
            return _counted(dataclasses.replace(asked, products=(of_kind[0],), goods=(), subject=""), kind[0]) \
                if one else asked
        discussed = pointers.discussed_of_kind(kind[0], vocabulary, memory.focus_product_ids,
                                             [t.assistant for t in memory.turns])
        if discussed is not None:
            name = vocabulary.full_name(discussed)
            line = vocabulary.line_of(discussed) if not asked.quantity else []
            if line and discussed not in memory.focus_product_ids and intent.elliptical(text) \
                    and not any(f"{name}（" in t.assistant for t in memory.turns):
                # 那球呢 after 篮球鞋: the balls of its line, each (篮球, 室外耐磨篮球), none of them discussed yet
                return dataclasses.replace(asked, products=(discussed, *line), follow_up=False, goods=(), subject="",
                                           asks=(asked.asks - {intent.Ask.BASKET, intent.Ask.COMPARE}) | {intent.Ask.LIST})
            return _counted(dataclasses.replace(asked, products=(discussed,), follow_up=False, goods=(), subject=""),
                            kind[0])
        return asked if bare else intent.read(text, vocabulary, labels=labels)

    async def _another_name(self, asked: intent.Intent) -> intent.Intent:
        """乒乓球板 holds the name 乒乓球 but is no near miss: the dictionary reads it as another product's own
        English name (table tennis bat: 乒乓球拍). Of the search's best few for the thing written, the first the
        dictionary names so is the product asked about — so too for goods asked in a clause of their own beside
        more words (有没有旱冰鞋，大人穿的: roller skates, 成人轮滑鞋), which the whole message's search may miss."""
        if asked.near_miss and len(asked.products) == 1:
            word = asked.near_miss
        elif not asked.products and asked.subject and asked.asked_outright and len(asked.parts) < 2 \
                and not intent.LIST_REQUEST.search(asked.text) and not asked.listing:   # (有哪些跑鞋: a list)
            word = asked.subject   # 有没有旱冰鞋，大人穿的: the thing asked, searched without the rest of the message
        else:
            return asked
        found = await self.search.find(word[:200], top_k=3, gated=False)   # the dictionary decides
        ids = [c.product_id for c in found.candidates]
        records = await fetch_products(self.conn, ids)
        same = next((p for p in ids if p in records and answers.dictionary_synonym(word, records[p])), None)
        if same is None:
            return asked
        return dataclasses.replace(asked, products=(same,), near_miss="", subject="", goods=(), named=())

    async def _unlike_the_record(self, asked: intent.Intent) -> intent.Intent:
        """儿童轮滑鞋 when the only 轮滑鞋 is 成人轮滑鞋: goods for someone the product's record says it is not for, or
        of a material it does not state (尼龙羽毛球: the record's are duck feather), are a near miss (the child's
        skates are not sold), not that product."""
        if len(asked.products) != 1 or len(asked.named) != 1 or asked.near_miss:
            return asked
        name = asked.named[0]
        at = asked.text.find(name)
        if at <= 0 or not qualifiers(asked.text, at, clause_start(asked.text, at)):
            return asked   # nothing qualifies the name: no record to read
        product = (await fetch_products(self.conn, list(asked.products))).get(asked.products[0])
        near = contradicted_phrase(asked.text, at, len(name), answers.record_text(product)) if product else ""
        return dataclasses.replace(asked, near_miss=near, subject=near) if near else asked

    async def _cheaper_than(self, asked: intent.Intent, vocabulary: Vocabulary) -> intent.Intent:
        """斯伯丁那个篮球有点贵 有没有便宜点的篮球: the goods asked for, below the price of the product said to be too
        dear — the one it names (of the brand it names), else the search's best for it; its brand is no filter."""
        if not asked.too_dear:
            return asked
        dear = intent.read(asked.too_dear, vocabulary)
        ids = list(dear.products) or [c.product_id for c in (await self.search.find(asked.too_dear[:200], top_k=5)).candidates]
        found = await fetch_products(self.conn, ids)
        priced = [found[p] for p in ids if p in found and found[p].price is not None]
        product = next((p for p in priced if dear.brand and p.brand == dear.brand), priced[0] if priced else None)
        if product is None:
            return dataclasses.replace(asked, too_dear="")
        cap = product.price - Decimal("0.01")   # strictly cheaper: SQL keeps prices at most the cap
        return dataclasses.replace(asked, too_dear=product.product_name,
                                   max_price=cap if asked.max_price is None else min(asked.max_price, cap))

    async def _described_pointer(self, text: str, asked: intent.Intent, vocabulary: Vocabulary,
                                 memory: ChatMemory, labels: frozenset[str]) -> intent.Intent:
        """给小孩踢的那个呢 after 足球: the kind in focus, described — read as if its name were written there
        (给小孩踢的足球); when the description fits another product of that kind (青少年训练足球), that one — the one
        whose name holds the description's words (越野的那款 → 越野跑鞋), else the one the embedder finds closest."""
        if asked.reference is None or asked.reference.kind != "this" or asked.products \
                or len(memory.focus_product_ids) != 1:
            return asked
        pointer = _DESCRIBED_POINTER.search(asked.text)
        focus = memory.focus_product_ids[0]
        names = vocabulary.chinese_names.get(focus, ())
        if pointer is None and (first := _POINTER_THEN_DESCRIBED.match(intent.reading(asked.text))):
            # 那种站在木板上、底下四个轮子的呢 after skates: other goods described, the search's clear first (its counts
            # are the thing's parts, no count of goods)
            return await self._described_other(asked, focus, first.group("d"), asked)
        if pointer is None or not names:
            return asked
        kind = min(names, key=len)
        again = intent.read(asked.text[:pointer.start() + 1] + kind + asked.text[pointer.end():], vocabulary,
                            has_focus=True, labels=labels)
        if again.products != (focus,):
            return asked
        description = asked.text[:pointer.start()]
        # 越野的那款呢 after 跑步鞋: the one product of the kind (鞋) whose name holds the words of the description
        written = {pid for name, pid in vocabulary.names.items() if pid != focus and name.endswith(kind[-1])
                   and any(len(w) >= 2 and w in name for w in plain_words(description))}
        if len(written) == 1:
            return intent.replace_product(again, focus, written.pop())
        again = await self._qualify(text, again, vocabulary)
        if again.products != (focus,):
            return again
        # 那手腕上擦汗的那个呢 after 头带: a description of other goods — the product the search ranks first for it, when
        # it does not find the one in focus or ranks it clearly lower
        return await self._described_other(asked, focus, description, again)

    async def _need_apart(self, text: str, asked: intent.Intent, memory: ChatMemory) -> bool:
        """Whether a having question about something described (有没有护着点的), with a need told and nothing named,
        asks for other goods than those in focus: the search's first for the message is none of them, and it finds
        them not at all or clearly lower (DESCRIBED_OTHER_MARGIN)."""
        shown = memory.focus_product_ids
        if not shown or asked.products or asked.goods or asked.category or asked.brand or asked.reference is not None \
                or intent.Ask.LIST not in asked.asks:
            return False
        folded = intent.reading(text)
        if not _HAVING_DESCRIBED.search(folded) or not mentions.tells_something(folded):
            return False
        found = {c.product_id: c.retrieval_score for c in (await self.search.find(text[:200], top_k=5)).candidates}
        best = max(found, key=found.__getitem__, default=None)
        if best is None or best in shown:
            return False
        ours = [found[pid] for pid in shown if pid in found]
        return not ours or found[best] - max(ours) >= DESCRIBED_OTHER_MARGIN

    async def _described_other(self, asked: intent.Intent, focus: str, description: str,
                               again: intent.Intent) -> intent.Intent:
        """The product the search ranks first for a description, when it does not find the one in focus or ranks it
        clearly lower (DESCRIBED_OTHER_MARGIN): that one, in `again`'s place of the focus; else `asked` as it was."""
        found = {c.product_id: c.retrieval_score for c in (await self.search.find(description, top_k=3)).candidates}
        best = max(found, key=found.__getitem__, default=focus)
        if best == focus or found[best] - found.get(focus, float("-inf")) < DESCRIBED_OTHER_MARGIN:
            return asked
        if again is asked:   # (described after the pointer: no count of goods in it)
            return dataclasses.replace(asked, products=(best,), quantity=None, quantities={}, reference=None,
                                       follow_up=False, goods=(), subject="")
        return dataclasses.replace(intent.replace_product(again, focus, best), follow_up=False)

    async def _sized(self, asked: intent.Intent, vocabulary: Vocabulary) -> intent.Intent:
        """四人帐篷, 4号足球: a size written before the product's name. The product named when its record states
        that size (or none of that unit); else the product whose name ends with the word written and whose
        record states it (4号足球 → 青少年训练足球); else a near miss — the shop has no such size."""
        if len(asked.products) != 1 or len(asked.named) != 1:
            return asked
        sized = sizes.size_before(asked.text, asked.named[0])
        if sized is None:
            return asked
        phrase, unit, value = sized
        own = asked.products[0]
        options = [own, *sorted(vocabulary.ending_with(asked.named[0]))]
        found = await fetch_products(self.conn, options)

        def stated(pid: str) -> list[tuple]:
            product = found[pid]
            return sizes.sizes(f"{product.product_name} {product.specifications or ''}").get(unit, [])
        if own not in found or not stated(own) or any(lo <= value <= hi for lo, hi in stated(own)):
            return asked
        other = next((p for p in options[1:] if p in found and any(lo <= value <= hi for lo, hi in stated(p))), None)
        if other is not None:
            return intent.replace_product(asked, own, other)
        return dataclasses.replace(asked, near_miss=phrase)

    async def _kind_added(self, asked: intent.Intent, vocabulary: Vocabulary) -> intent.Intent:
        """Goods of a kind added to an order (再给两个守门员各配一副手套): the search's first for the message, when it is
        of that kind, at the count written."""
        kind = intent.noun_stem(asked.goods[0])
        found = (await self.search.find(asked.text[:200], top_k=1)).candidates
        if not found or not vocabulary.of_kind(found[0].product_id, kind[-1:]) \
                or kind not in vocabulary.full_name(found[0].product_id):
            return asked
        pid = found[0].product_id
        return dataclasses.replace(asked, products=(pid,), goods=(), subject="",
                                   quantities={pid: asked.quantity} if asked.quantity else {})

    async def _resolve(self, asked: intent.Intent, memory: ChatMemory, vocabulary: Vocabulary) -> intent.Intent:
        """第二个 / 便宜的那个 / 这个 → the product of the last answer it points at (prices read by SQL); the cheaper or
        dearer after two products asked one by one (壶铃, then 哑铃呢) is of those two."""
        shown, last_quantity = memory.focus_product_ids, memory.last_quantity
        adding = _ADDING.search(asked.text)
        # (several shown are a basket when the last answer priced each at a count, not a list shown)
        basket = answers.counts_priced(memory.turns[-1].assistant, vocabulary) \
            if adding and len(shown) > 1 and memory.turns else {}
        kept = [pid for pid in shown if pid in basket] if basket else shown[:1]
        bought = bool(memory.turns) and answers.ORDERS_FOUND in memory.turns[-1].assistant   # (goods of an order shown)
        if adding and kept and not bought and not asked.products and len(asked.goods) == 1:
            asked = await self._kind_added(asked, vocabulary)   # 再给两个守门员各配一副手套: which gloves, by the search
        if adding and kept and len(kept) == len(shown) and asked.products and not set(kept) & set(asked.products) \
                and not bought:   # 想再配个砖 after the mat's order: the block alone, the mat is bought already
            # 再加两套弹力带: the products being discussed stay in the order, the new one joins them
            before = [m for m in find_mentions(asked.text[:adding.start()])
                      if m.kind == QUANTITY and m.value is not None and m.value == int(m.value) and m.value >= 1]
            own = int(before[-1].value) if before else None   # 那就5个再加一根跳绳: 5 of the one discussed
            added = asked.quantities or ({asked.products[0]: asked.quantity}   # (砖也来两块: the count read for the kind)
                                         if asked.quantity and len(asked.products) == 1 and own is None else {})
            quantities = {**(basket or {shown[0]: own or last_quantity or 1}), **added}
            return dataclasses.replace(asked, products=(*kept, *asked.products), quantities=quantities,
                                       asks=asked.asks | {intent.Ask.BASKET})
        pointer = asked.reference
        if pointer is None or asked.products or not shown:
            return asked
        pick: str | None = None
        if pointer.kind == "which":   # 我儿子9岁，校队训练用的，哪个合适 after a list: the one clearly described, if any
            described = await self._described_of(asked, shown, vocabulary) if len(shown) >= 2 else []
            if len(described) != 1:
                return asked
            pick = described[0]
        if pointer.kind == "this" and len(shown) >= 2:   # 李宁那个, 防崴脚那个 after a list: the one it describes
            shown = await self._described_of(asked, shown, vocabulary)
        if pointer.kind in ("ordinal", "first", "last") and len(shown) == 1:
            # 还是要第一个吧 after 水壶, then 保温杯呢: of those discussed one by one, in the order they came
            shown = list(pointers.discussed_apart(vocabulary, [t.assistant for t in memory.turns], shown)) or shown
        if pointer.kind == "ordinal" and pointer.position is not None and pointer.position <= len(shown):
            pick = shown[pointer.position - 1]
        elif pointer.kind == "this" and len(shown) >= 2 and (concluded := _concluded(memory, shown, vocabulary)):
            pick = concluded   # 就它了 after 室外耐磨篮球更便宜: the one the comparison picked
        elif pointer.kind in ("first", "this"):
            pick = shown[0]
        elif pointer.kind == "last":
            pick = shown[-1]
        elif pointer.kind == "fullest":   # 哪个库存最多: of those shown, the most in stock by the records
            most = answers.most_in_stock((await fetch_products(self.conn, shown)).values())
            pick = most.product_id if most is not None else None
        elif pointer.kind in ("cheapest", "dearest"):
            if len(shown) == 1:   # 便宜的那个 after 壶铃, then 哑铃呢: the cheaper of the two discussed one by one
                shown = list(pointers.discussed_apart(vocabulary, [t.assistant for t in memory.turns], shown)) or shown
            if len(shown) == 1:   # 最便宜的那个 after 有足球卖吗: of the shown one's line (青少年训练足球 too)
                shown = [shown[0], *vocabulary.line_of(shown[0])]
            # by what one costs now, as a comparison says which is cheaper (a promotion may turn the order)
            found = await fetch_products(self.conn, shown)   # the rows read once, every quote built from them
            promotions = await fetch_promotions(self.conn, list(found))
            quotes = [quote_from(found, promotions, pid, 1, asked.first_purchase) for pid in found]
            paid = {q.product_id: q.final_total for q in quotes if isinstance(q, Quote)}
            if paid:
                pick = (min if pointer.kind == "cheapest" else max)(paid, key=paid.__getitem__)
        if pick is None:
            return asked
        quantities = {pick: asked.quantity} if asked.quantity else {}
        return dataclasses.replace(asked, products=(pick,), follow_up=False, quantities=quantities,
                                   goods=(), subject="")

    async def _another_brand(self, asked: intent.Intent, memory: ChatMemory,
                             vocabulary: Vocabulary) -> intent.Intent:
        """那斯伯丁那个呢 after 室外耐磨篮球 (威尔胜): the brand's product of the kind in focus, asked as that one was —
        the one of its products whose name ends as the focus's does (球), else the closest by meaning of them."""
        focus = memory.focus_product_ids
        if not asked.brand or asked.products or asked.goods or asked.category or len(focus) != 1 \
                or intent.Ask.LIST in asked.asks or vocabulary.brand_of.get(focus[0]) == asked.brand:
            return asked
        names = vocabulary.chinese_names.get(focus[0], ())
        kind = min(names, key=len)[-1:] if names else ""
        of_brand = [pid for pid in vocabulary.products_of_brand.get(asked.brand, ())
                    if kind and vocabulary.of_kind(pid, kind)]
        if len(of_brand) >= 2:
            close = await self.search.closeness(min(names, key=len), of_brand)
            of_brand = sorted(close, key=close.__getitem__, reverse=True)[:1] or of_brand[:1]
        if not of_brand:
            return asked
        return dataclasses.replace(asked, products=(of_brand[0],), follow_up=False, reference=None, subject="")

    async def _described_of(self, asked: intent.Intent, shown: list[str],
                            vocabulary: Vocabulary) -> list[str]:
        """Of the products shown, those a pointer describes: the brand it names (安德玛那条裤子), then the one its other
        words are clearly closest to by meaning (防崴脚那个 → 护踝, by QUALIFIED_MARGIN over the next); all of them
        when it says nothing of which."""
        if asked.brand:   # the catalog's brands are in the vocabulary: no query
            shown = [pid for pid in shown if vocabulary.brand_of.get(pid) == asked.brand] or shown
        described = pointers.pointer_description(asked.text)
        if len(shown) >= 2 and described:
            close = await self.search.closeness(with_ages(described)[:200], shown)
            ranked = sorted(close, key=close.__getitem__, reverse=True)
            if len(ranked) >= 2 and (best := _clearly_closer(close, ranked[1])) is not None:
                shown = [best]
        return shown

    async def _count_pairs(self, asked: intent.Intent, focus: list[str]) -> intent.Intent:
        """登山杖买一对, 护膝要一对: a pair of goods the shop sells one piece at a time is two of them (shoes and
        gloves are sold in pairs, dumbbells as a set: 一双, 一对 is one); the unit is the one the price quote
        uses (db.pricing.measure_word)."""
        if not (asked.in_pairs or asked.quantity_in_pairs):
            return asked
        meant = list(asked.products) or (focus[:1] if asked.follow_up else [])
        products = await fetch_products(self.conn, meant) if meant else {}
        single = {pid for pid, p in products.items()
                  if measure_word(p.product_name, p.specifications) in SINGLE_UNITS}
        quantities = {pid: n * 2 if pid in single and pid in asked.in_pairs else n
                      for pid, n in asked.quantities.items()}
        one = meant[0] if len(meant) == 1 else None
        quantity = asked.quantity
        if quantity and one in single and (one in asked.in_pairs or asked.quantity_in_pairs and one not in asked.quantities):
            quantity *= 2
        return dataclasses.replace(asked, quantities=quantities, quantity=quantity)

    @staticmethod
    def _focus(released: Released, ledger: EvidenceLedger) -> tuple[list[str], int | None]:
        """Products of the last verified answer in the order it showed them, and its quantity, so that
        follow-ups (那买两个呢) and references (第二个, 便宜的那个) resolve against what the customer saw."""
        if released.status != AnswerStatus.GROUNDED:
            return [], None
        cited = ledger.cited(released.citations)
        calcs = [e for e in cited if e.kind == EvidenceKind.CALC]
        calculated = sorted(calcs[-1].product_ids) if calcs else []
        shown = [pid for e in cited if e.kind == EvidenceKind.PRODUCT for pid in sorted(e.product_ids)]
        orders = [e for e in cited if e.kind == EvidenceKind.ORDER]
        if not (shown or calculated) and len(orders) == 1:   # one order shown: its goods (再买两个一样的)
            return sorted(orders[0].product_ids), None
        # the calculation's products, unless the answer showed more (a listing or a comparison that states one
        # product's discounted price): then all of them, and no quantity of its own
        whole = bool(calcs) and set(shown) <= set(calculated)
        quantity = getattr(calcs[-1].record, "quantity", None) if whole else None
        ids = calculated if whole else shown + calculated
        names = {pid: getattr(e.record, "product_name", "") for e in ledger.entries.values()
                 if e.kind == EvidenceKind.PRODUCT for pid in e.product_ids}
        answer = released.answer

        def shown_at(pid: str) -> int:
            at = answer.find(names.get(pid) or "\0")
            return at if at >= 0 else len(answer)
        return sorted(dict.fromkeys(ids), key=shown_at), quantity


def _counted(asked: intent.Intent, kind: str) -> intent.Intent:
    """The count written for goods a kind of them means (砖也来两块: two blocks, not two yuan), when none was read."""
    at = asked.text.find(kind)
    if asked.quantity is not None or at < 0 or len(asked.products) != 1:
        return asked
    per, overall, *_ = quantities(asked.text, [(at, at + len(kind), asked.products[0])])
    count = per.get(asked.products[0]) or overall
    return dataclasses.replace(asked, quantity=count, quantities={asked.products[0]: count}) if count else asked


# The words a comparison concludes with, after the name of the one it picks (室外耐磨篮球更便宜, 壶铃更轻)
_CONCLUDED = "(?:（[^）]*）)?(?:更|比较)(?:便宜|贵|重|轻|大|小|长|短|厚|薄|多|少)"


def _concluded(memory: ChatMemory, shown: list[str], vocabulary: Vocabulary) -> str | None:
    """The one of `shown` the last answer's closing comparison names (室外耐磨篮球更便宜。), or None."""
    last = memory.turns[-1].assistant.rstrip("。\n").rsplit("。", 1)[-1] if memory.turns else ""
    at = {pid: m.start() for pid in shown
          if (m := re.search(re.escape(vocabulary.full_name(pid) or "\0") + _CONCLUDED, last))}
    return min(at, key=at.__getitem__) if at else None   # (the earliest: 篮球 is inside 室外耐磨篮球更便宜)


# Goods of a basket replaced by others (那杯子换成普通运动水壶, 把球拍改成尤尼克斯的)
_SWAP = re.compile(r"(?P<old>[\u4e00-\u9fff]{1,6}?)(?:换成|改成|换为|改为)")
_SPORT_PLAYED = re.compile(f"[{intent.PLAY_VERBS}]")
# Where a list of goods breaks: punctuation, and 加/和/再 before a count (一支拍子加一筒球; not the 加 of 加厚)
_LISTED = re.compile(r"[，,、;；。]|(?:加上?|和|跟|再来|再要|外加|还有)(?=\s*(?:[一二两三四五六七八九十几]|\d|个))"
                     f"|(?={NUM}\\s*{MEASURE})")   # (一支拍子两罐球: a piece for each count)


def _order_pointed(text: str, memory: ChatMemory | None) -> str:
    """第一个是什么状态 after the customer's orders were listed: the order it points at, by its id, in the order shown."""
    listed = answers.orders_listed(memory.turns[-1].assistant) if memory and memory.turns else []
    pointer = mentions.reference(intent.reading(text)) if len(listed) >= 2 else None
    if pointer is None:
        return text
    at = {"first": 0, "last": len(listed) - 1}.get(pointer.kind)
    if pointer.kind == "ordinal" and pointer.position is not None and pointer.position <= len(listed):
        at = pointer.position - 1
    return text if at is None else f"订单{listed[at]} {text}"


def _tells_a_fact(text: str, vocabulary: Vocabulary) -> bool:
    """Whether a message tells something of the customer's own and names no goods (我脚背挺高的, 我在乌鲁木齐)."""
    asked = intent.read(text, vocabulary)
    return mentions.tells_something(asked.text) and not (asked.products or asked.goods or asked.category
                                                          or asked.brand)


def _taken_up(asked: intent.Intent, memory: ChatMemory) -> bool:
    """Whether a message naming no product, brand or category searches goods only by words of the last answer (电子 of
    its 电子发票): words taken up from it, no goods asked for."""
    return bool(asked.goods) and not (asked.products or asked.brand or asked.category) and bool(memory.turns) \
        and all(word in memory.turns[-1].assistant for word in asked.goods)


def _priced_in(answer: str, products: Iterable[str], vocabulary: Vocabulary) -> bool:
    """Whether an answer stated the price of any of the products (its name, then 售价 in the same sentence)."""
    return any(re.search(f"{re.escape(name)}[^。；\n]{{0,12}}售价", answer)
               for pid in products for name in vocabulary.chinese_names.get(pid, ()))


def _clearly_closer(close: dict[str, float], own: str, *, exclude_own: bool = False) -> str | None:
    """Of the products scored by closeness, the one clearly closer than `own` (by QUALIFIED_MARGIN), or None; with
    `exclude_own` (`own` is not meant) the closest of the others, whatever the margin."""
    best = max((pid for pid in close if not exclude_own or pid != own), key=close.__getitem__, default=None)
    if best is None or best == own:
        return None
    return best if exclude_own or close[best] - close.get(own, 0.0) >= QUALIFIED_MARGIN else None


def _priced(asked: intent.Intent, products: tuple[str, ...]) -> intent.Intent:
    """The message read as asking the price of these products (some of those just shown), not for a list."""
    return dataclasses.replace(asked, products=products, category=None, follow_up=False, reference=None,
                               asks=(asked.asks - {intent.Ask.LIST}) | {intent.Ask.PRICE})
