"""The offline model: deterministic, no network. It calls the same tools through the same loop, reads
their typed results from the turn context (never by re-parsing JSON), and writes its answers from
verified records only — so they pass the same validator. Used when no API key is configured, and as
the degraded mode."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from agent import answers, promotion_answers
from agent.context import TurnContext
from agent.counts import buys_a_count
from agent.intent import (
    LIST_REQUEST,
    PRODUCT_ASKS,
    Ask,
    Intent,
    covers,
    goods_head,
    need_in_comparison,
    noun_stem,
    refund_asked,
    unspecific,
    wanted_phrase,
)
from agent.mentions import contradicted_phrase, tells_only_whom
from agent.models import Message, ModelReply, ToolCall
from agent.sizes import size_stated, size_unstated
from agent.tools import SUBMIT
from agent.vocabulary import CATEGORY_WORDS, base_name
from db.facts import AmountDifference, DiscountType, Product, QuoteRefusal, ReceivePlan, Status, ThresholdPlan
from guardrails.fallback import SAFE_FALLBACK
from guardrails.figures import DISCOUNT, MONEY, find_mentions
from guardrails.validator import AnswerStatus

# A question about reaching a promotion's threshold (买几个能包邮, 还差多少能减, 凑单).
# 有没有轻一点的 / 有防水的吗 / 有能计数的吗: does the shop have one with this property (a product wanted, not a fact)
_HAS_ONE_THAT = re.compile(r"有(?:没有)?[^，,。？?！!有]{1,10}的[^，,。？?！!的]{0,8}?(?:吗|么|嘛|不|没|没有)?\s*[？?]?\s*$"
                           r"|有没有[^，,。？?！!]{1,10}的|[^，,。？?！!]{1,10}的(?:有吗|有么|有没有|有不|有卖)")
_THRESHOLD = re.compile(r"几[个件双支盒套张瓶罐筒只]?(?:才|就)?(?:能|可以|够)|还差|差多少|差几|凑单|凑够|才能|才可以|够不够|"
                        r"(?:几|多少)[个件双支盒套张瓶罐筒只]?[^，,。？?]{0,3}(?:包邮|免运费|满减|打折)|"
                        r"多少(?:钱|元)?(?:才|就)?(?:能|可以)(?:包邮|减|打折)|满多少|门槛")
# Two amounts compared by how much (贵多少, 差价).
_DIFFERENCE = re.compile(r"贵多少|便宜多少|差多少|相差|差价|差几|多多少钱|少多少钱|贵了多少|便宜了多少|贵几|便宜几"
                         r"|how much (?:more|less|cheaper|dearer|pricier)|price difference|difference in (?:the )?price"
                         r"|(?:more expensive|cheaper|dearer|pricier) by how much")


# The words a customer uses for each kind of threshold promotion.
_THRESHOLD_WORDS = {DiscountType.FREE_SHIPPING: re.compile("包邮|运费|邮费"),
                    DiscountType.FIXED_REDUCTION: re.compile("减")}


# The average a unit comes to (平均一支多少钱, 每个合多少, 折合一双, 摊下来一个).
_PER_UNIT = re.compile(r"平均|折合|摊下来|合多少|合几|算下来一|算下来每|average|per (?:one|unit|piece|item)")

_ORDER_ID = re.compile(r"(?<![A-Za-z0-9])([A-Z]\d{3,})(?!\d)")
KIND_LISTED = 8   # a kind asked about (鞋子都啥价位) lists at most this many of its products, each priced


def _searched(messages: Sequence[Message]) -> list[str]:
    """The queries of the searches asked for so far, in order (the model's own calls in the messages)."""
    queries = []
    for message in messages:
        for call in message.get("tool_calls") or ():
            if call["function"]["name"] == "search_products":
                try:
                    queries.append(str(json.loads(call["function"]["arguments"]).get("query") or ""))
                except (ValueError, AttributeError):
                    queries.append("")
    return queries


def _within(product: Product, asked: Intent, paid: Decimal | None = None) -> bool:
    """Whether the product's price, or what one costs now (`paid`, under its promotions), is within the budget."""
    price = product.price if paid is None else paid
    return price is not None and (asked.max_price is None or price <= asked.max_price) \
        and (asked.min_price is None or price >= asked.min_price)


# What the shop sells asked of the shop itself (你们卖什么的, 你家店都卖些啥): its goods, whatever is in focus
_SHOP_SELLS = re.compile(r"(?:你们|你家|店里?|本店).{0,4}卖(?:些|点)?(?:啥|什么)")


class OfflineModel:
    name = "offline"
    reads_json = False   # it reads the typed results in the turn context, so none are serialized for it

    def __init__(self) -> None:
        self._counter = 0

    def _call(self, name: str, arguments: dict[str, Any]) -> ModelReply:
        self._counter += 1
        return ModelReply(None, [ToolCall(f"offline_{self._counter}", name, json.dumps(arguments, ensure_ascii=False))])

    def _submit(self, answer: str, citations: list[str], status: str = AnswerStatus.GROUNDED) -> ModelReply:
        return self._call(SUBMIT, {"answer": answer, "citation_ids": citations, "status": status})

    def _calls(self, calls: list[tuple[str, dict[str, Any]]]) -> ModelReply:
        replies = [self._call(name, args).tool_calls[0] for name, args in calls]
        return ModelReply(None, replies)

    async def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]],
                       tool_choice: str = "auto", context: TurnContext | None = None) -> ModelReply:
        if context is None:   # called outside the turn loop: only the customer's last message is known
            last = next(m for m in reversed(messages) if m["role"] == "user")
            context = TurnContext(question=last.get("content") or "", user_id="")
        asked = context.intent
        assert asked is not None
        focus, called = context.focus_product_ids, context.called
        if context.rejections:
            return self._submit(SAFE_FALLBACK, [], AnswerStatus.INSUFFICIENT)
        if not context.results:
            return self._first_step(asked, focus, context.question)
        findings = answers.Findings.gather(result for _, result in context.results)
        if not self._has_product_part(asked, focus):
            return self._final(asked, findings, None, focus)
        step = self._product_step(asked, focus, findings, called, _searched(messages))
        if isinstance(step, ModelReply):
            return step
        return self._final(asked, findings, step, focus)

    def _final(self, asked: Intent, findings: answers.Findings,
               product: tuple[str, list[str], str] | None, focus: Sequence[str] = ()) -> ModelReply:
        """One answer with a part for each thing asked: the product part, then the policy, the orders and
        the way to a person; an apology first for a complaint, a polite no first for bargaining."""
        texts, cites, grounded, missing = [], [], False, False
        if Ask.COMPLAINT in asked.asks:
            texts.append(answers.APOLOGY)
        if Ask.BARGAIN in asked.asks and Ask.MODIFY not in asked.asks:
            texts.append(answers.NO_BARGAIN if product and product[1] else answers.NO_BARGAIN_WHICH)
        if self._premises_only(asked):   # 实体店能退货吗: no premises to speak of, then the policy asked
            texts.append(answers.PREMISES)
            missing = True
        if product is not None:
            texts.append(product[0])
            cites += product[1]
            grounded = product[2] == AnswerStatus.GROUNDED
            missing = not grounded
        if findings.document_sets and (asked.asks & {Ask.POLICY, Ask.HUMAN} or self._about_goods_received(asked)):
            text, doc_cites = answers.policy_answer(findings, whole_sets=bool(asked.labels))
            texts.append(text)
            cites += doc_cites
            grounded = True
        elif Ask.POLICY in asked.asks and findings.searched_knowledge:
            texts.append(answers.NO_POLICY)
            missing = True
        if findings.orders is not None and Ask.ORDER in asked.asks:
            if findings.orders:
                refund = refund_asked(asked.text)   # (退我多少钱 after the order shown: that order's goods, in focus)
                text, order_cites = answers.orders_answer(findings, asked.products or (tuple(focus) if refund else ()), refund)
                texts.append(text)
                cites += order_cites
                grounded = True
            else:
                texts.append(answers.NO_ORDERS)
                missing = True
        if not texts:
            texts.append(answers.CLARIFY)
            missing = True
        if Ask.GREETING in asked.asks and not texts[0].startswith(("您好", "非常抱歉")):
            texts[0] = answers.GREETING_PREFIX + texts[0]
        status = AnswerStatus.GROUNDED if grounded or not missing else AnswerStatus.INSUFFICIENT
        return self._submit("\n".join(texts), list(dict.fromkeys(cites)), status)

    @staticmethod
    def _has_product_part(asked: Intent, focus: list[str]) -> bool:
        """Whether the message asks something about goods (besides any policy, order or person part)."""
        if asked.asks & {Ask.INJECTION, Ask.MODIFY}:
            return False
        if asked.asks & PRODUCT_ASKS or asked.near_miss:
            # 我买的东西还有没到的吗: the customer's own orders; a product ask beside them with no goods named and
            # none in focus has nothing to look up
            return not (Ask.ORDER in asked.asks and not (asked.names_goods or focus or asked.reference))
        if Ask.BARGAIN in asked.asks:
            return bool(asked.products or focus)
        if asked.asks & {Ask.POLICY, Ask.ORDER, Ask.HUMAN, Ask.COMPLAINT, Ask.GREETING, Ask.THANKS, Ask.OFF_TOPIC,
                         Ask.SPENDING}:
            return False
        return not asked.names_nothing or bool(focus) or asked.reference is not None

    def _product_step(self, asked: Intent, focus: list[str], findings: answers.Findings, called: list[str],
                      searched: Sequence[str] = ()) -> ModelReply | tuple[str, list[str], str]:
        """The next call for the product part, or its finished answer (text, citations, status); `searched`:
        the queries of this turn's searches, in order."""
        if findings.categories is not None:
            return answers.browse_answer(findings.categories, tells_only_whom(asked.text)), [], AnswerStatus.GROUNDED
        several = self._several(asked, findings)
        comparing = bool(several) and Ask.COMPARE in asked.asks and not _DIFFERENCE.search(asked.text)
        budget = self._named_within_budget(asked) and "get_product_details" in called
        listing = not several and asked.listing and "search_products" in called and bool(findings.products or asked.filtered)
        if findings.basket is not None and not (comparing or budget or listing):   # else it is the price of each
            stock = findings.products if Ask.STOCK in asked.asks else None   # …还有多少库存: each line's stock too
            return (*answers.basket_answer(findings.basket, stock, asked.total_budget), AnswerStatus.GROUNDED)
        if budget:
            # 想买个足球，预算100出头 / 水壶水杯预算50以内: of the products named, those whose price paid now is
            # within the budget (Decimal against the customer's figures; an unpriced product is not within it)
            named = [p for p in asked.products if p in findings.products]
            if "calculate_final_price" not in called and self._discounted(named, findings):
                return self._price_each(named, asked)
            paid = {line.product_id: line.final_total for line in findings.basket.lines} if findings.basket else {}
            kept = [p for p in named if _within(findings.products[p], asked, paid.get(p))]
            if not kept:
                named = [findings.products[p] for p in asked.products if p in findings.products]
                return (*answers.over_budget_answer(named), AnswerStatus.GROUNDED) if named else \
                    (answers.no_listing(asked), [], AnswerStatus.INSUFFICIENT)
            within = dataclasses.replace(findings, candidates=kept)
            if len(kept) == 1:
                return self._about_one(dataclasses.replace(asked, products=tuple(kept)), within, called)
            answer, cites = answers.listing_answer(within, asked)
            return answer, cites, AnswerStatus.GROUNDED
        if several:
            if _DIFFERENCE.search(asked.text) and len(several) == 2 and not answers.attribute_asked(asked.text):
                # (容量差多少: how the capacities differ, each one's figure — not the prices)
                first, second = (findings.products[p] for p in several)
                if "compare_amounts" not in called:
                    return self._call("compare_amounts", {"first_id": first.evidence_id,
                                                          "second_id": second.evidence_id})
                diff = next((p for p in findings.plans if isinstance(p, AmountDifference)), None)
                if diff is not None:
                    return (*promotion_answers.difference_answer(diff), AnswerStatus.GROUNDED)
            if Ask.COMPARE in asked.asks:
                products = [findings.products[p] for p in several]
                if answers.compares_prices(asked) and "calculate_final_price" not in called \
                        and self._discounted(several, findings):   # a promotion may change which is cheaper
                    return self._price_each(several, asked)
                measured = answers.measured_comparison(products, asked.text)   # read once: the need, then the answer
                need = "" if answers.compares_prices(asked) or measured else need_in_comparison(asked)
                if need and need not in searched:   # 哪个能放湿衣服: which one the search finds for it
                    return self._call("search_products", {"query": need, "top_k": 5})
                answered = need and searched[-1:] == [need] and len(findings.searches) == len(searched)
                # the search's best product for the need is one of them: that one (else no verdict, each one's use)
                fits = [p for p in findings.searches[-1][:1] if p in several] if answered else None
                return (*answers.compare_answer(products, asked, findings.basket, fits=fits, measured=measured),
                        AnswerStatus.GROUNDED)
            calc = findings.calculation
            if isinstance(calc, QuoteRefusal) and calc.status == Status.PRICE_UNAVAILABLE and calc.product_id in several:
                return (*answers.unpriced_basket_answer([findings.products[p] for p in several], calc),
                        AnswerStatus.GROUNDED)
            if self._each_asked(asked):
                return (*answers.each_answer([findings.products[p] for p in several], findings, asked.attribute_question,
                                             asked.asks), AnswerStatus.GROUNDED)
            items = [{"product_id": p, "quantity": asked.quantities.get(p) or 1} for p in several]
            return self._call("calculate_final_price", {"items": items, "is_first_purchase": asked.first_purchase})
        thing, related = ("", "") if asked.tells_need else asked.related   # 滑雪板 → 滑板, 击剑用的手套 → 手套
        if related and related in searched[1:] and findings.products:   # 滑雪板 → 滑板: not sold, then that
            order = [p for p in findings.candidates if p in findings.products] or list(findings.products)
            return (*answers.related_answer(thing, [findings.products[order[0]]]), AnswerStatus.GROUNDED)
        if listing:
            words = searched[0] if searched else self._listing_words(asked)   # what the listing's search was for
            if not findings.products and called.count("search_products") == 1 and words \
                    and not (len(words) == 1 and asked.goods == (words,)) and not findings.outside_filters:
                # the words found nothing at all: list what the filters alone allow (not when they found goods the
                # budget leaves out, 200以内的跑鞋, nor for a kind of goods written in one character, 300以内的鞋:
                # the catalog said there is none within it); a need told in a sentence is searched by the sentence
                # first (膝盖吃力…想买个能撑一下的东西: its words found nothing, its meaning may)
                # (not when the sentence names what is ruled out: 哑铃壶铃我都有了 would find those)
                sentence = asked.text if asked.describes_need and asked.text != words and not asked.unwanted else ""
                return self._call("search_products", self._listing_filters(asked, sentence))
            listed = [p for p in findings.candidates
                      if p in findings.products and not answers.ruled_out(findings.products[p], asked)]
            if len(listed) == 1 and Ask.LIST not in asked.asks:
                # 佳明那个GPS表有送东西吗, speedo有防雾的泳镜吗: the brand's one product, what is asked of it (not a list
                # of one), and the one in focus after
                return self._about_one(dataclasses.replace(asked, products=tuple(listed), subject="", goods=()),
                                       findings, called)
            if "calculate_final_price" not in called and self._discounted(listed, findings):
                return self._price_each(listed, asked)   # a listing says what each costs now
            answer, cites = answers.listing_answer(findings, asked)
            return answer, cites, AnswerStatus.GROUNDED if cites else AnswerStatus.INSUFFICIENT
        if asked.listing and asked.describes_need and not findings.products and searched \
                and asked.text[:200] not in searched:
            # 我打羽毛球老崴脚 有啥能护一下的: the words read as goods (羽毛球老崴) found nothing with no filter to list
            # by; the need told in the sentence is searched by its meaning
            return self._call("search_products", {"query": asked.text[:200], "top_k": 3})
        kind = OfflineModel._bare_kind(asked)
        if kind and kind not in searched:   # 包多少钱, 鞋子都啥价位: which bags or shoes there are, searched alone
            return self._call("search_products", {"query": kind, "top_k": 10})
        if findings.products:
            return self._about_one(asked, findings, called)
        if focus and asked.follow_up and "get_product_details" not in called:
            return self._call("get_product_details", {"product_ids": focus})
        if asked.names_nothing:   # retrieval found nothing either: ask which product, never "not sold"
            return answers.CLARIFY, [], AnswerStatus.INSUFFICIENT
        if related and related not in searched:
            # 滑雪板: the search refused the thing itself; the thing without the qualifier no product name writes
            # (滑板) is what the shop has that is related — "not sold", then that
            return self._call("search_products", {"query": related, "top_k": 3})
        listed = asked.parts[1:] if asked.parts and asked.parts[0] == asked.subject else ()   # 冰爪和冰镐
        return answers.not_sold_answer("" if asked.tells_need else asked.subject, *listed), [], \
            AnswerStatus.INSUFFICIENT

    @staticmethod
    def _bare_kind(asked: Intent) -> str:
        """The kind asked about when it is written as one character, or as a word several names end with (球拍), and
        nothing is named or described (包多少钱, 鞋子有吗, 球拍都多少钱: 包, 鞋, 球拍); '' otherwise."""
        stem = noun_stem(asked.subject) if asked.subject and not asked.products and not asked.describes_need else ""
        # (…松紧不一样的带子，一套好几根的: the thing the need describes); the reader's kind, if of this subject still
        return asked.kind if stem and stem == asked.kind else ""

    @staticmethod
    def _unlike_record(asked: Intent, main: Product) -> str:
        """The thing asked for, when the product found is not it by its own record: a size the record states others
        of (给闺女买轮滑鞋 她穿28码: 尺码35-45), or goods for someone it says it is not for (女士连体泳衣 → 男士泳裤); ''."""
        size = size_unstated(asked.text, answers.sized_record(main))
        if size:
            return f"{size}的{asked.subject or next(iter(asked.named), '') or base_name(main.product_name)}"
        if not asked.subject or asked.products:
            return ""
        return contradicted_phrase(asked.text, asked.text.find(asked.subject), len(asked.subject),
                                   answers.record_text(main))

    @staticmethod
    def _each_asked(asked: Intent) -> bool:
        """Several products each asked about — their stock, promotions or an attribute, beside their price or
        not (足球多少钱，篮球有货吗: two questions, not a sum) — with no total or quantity asked (the router's
        reading decides: 各还剩多少 asks stock, though 多少 may ask a price). A price alone is priced together."""
        # (a reading of a total the reader set aside, 各多厚 with nothing bought, is none)
        total = Ask.BASKET in asked.asks and ("basket" in asked.labels if asked.labels else True)
        return not total and not asked.quantities and not asked.first_purchase \
            and bool(asked.asks & {Ask.STOCK, Ask.PROMOTION, Ask.SPEC, Ask.LIST})   # (那球呢: the balls, each)

    @staticmethod
    def _discounted(ids: list[str], findings: answers.Findings) -> bool:
        """Whether a promotion may lower what one of these products costs now."""
        return any(answers.price_promotions(findings.promotions.get(p, ())) for p in ids)

    def _price_each(self, ids: list[str], asked: Intent) -> ModelReply:
        """One of each, priced under its promotions: the price each costs now."""
        return self._call("calculate_final_price", {"items": [{"product_id": p, "quantity": 1} for p in ids],
                                                    "is_first_purchase": asked.first_purchase})

    @staticmethod
    def _several(asked: Intent, findings: answers.Findings) -> list[str]:
        """The products of a message about several: those it names, else the best candidate of each search."""
        if not asked.several:
            return []
        ids = [p for p in asked.products if p in findings.products]
        if len(ids) < 2:
            ids = [s[0] for s in findings.searches if s and s[0] in findings.products]
        ids = list(dict.fromkeys(ids))
        return ids if len(ids) >= 2 else []

    def _about_one(self, asked: Intent, findings: answers.Findings,
                   called: list[str]) -> ModelReply | tuple[str, list[str], str]:
        order = [pid for pid in findings.candidates if pid in findings.products] or list(findings.products)
        if kept := [pid for pid in order if not answers.ruled_out(findings.products[pid], asked)]:
            # 哑铃壶铃这种铁家伙就算了，有别的吗: what the search found, but what the customer ruled out
            order = kept
            findings = dataclasses.replace(findings, candidates=kept)
        main = findings.products[order[0]]
        if asked.near_miss:
            rest = asked.text.replace(asked.near_miss, " ")
            # 卧推凳多少钱，配哑铃用的: the product named is what the thing is for, not a question of its own
            rest = re.sub(r"(?:配|搭配|配合|给)?(?:" + "|".join(map(re.escape, asked.named)) + r")(?:一起)?用的?", " ",
                          rest) if asked.named else rest
            if not any(name in rest for name in asked.named):
                return (*answers.related_answer(asked.near_miss, [main]), AnswerStatus.GROUNDED)
            # 篮球架有吗？篮球多少钱: the thing is not sold, and the product named apart is asked about too
            itself = self._about_one(dataclasses.replace(asked, near_miss=""), findings, called)
            if isinstance(itself, ModelReply):
                return itself
            return answers.not_sold_line(asked.near_miss) + itself[0], itself[1], itself[2]
        subject = asked.subject
        if unlike := self._unlike_record(asked, main):   # 她穿28码 (35-45), 女士连体泳衣 (男士泳裤): not that one
            # …unless another product found, of the same kind, states that size (正规的5号比赛用球: 足球, not 五人制)
            sized = next((findings.products[p] for p in order[1:] if findings.products[p].product_name[-1:]
                          == main.product_name[-1:] and size_stated(asked.text, answers.sized_record(findings.products[p]))),
                         None)
            if sized is None:
                return (*answers.related_answer(unlike, [main]), AnswerStatus.GROUNDED)
            main, order = sized, [sized.product_id, *(p for p in order if p != sized.product_id)]
            findings = dataclasses.replace(findings, candidates=order)
        if kind := self._bare_kind(asked):   # 鞋子多少钱: which shoes? those found
            of_kind = [findings.products[p] for p in order if answers.of_kind(kind, findings.products[p])]
            if len(of_kind) >= 2:
                return (*answers.kind_answer(subject, of_kind[:KIND_LISTED]), AnswerStatus.GROUNDED)
        # another name of the product itself (旱冰鞋 for 成人轮滑鞋, 游泳眼镜 for 防雾泳镜): answered as if named
        synonym = bool(subject) and (answers.dictionary_synonym(subject, main)
                                     or answers.written_in_full(subject, main.product_name)
                                     or answers.mistyped(subject, main.product_name)   # 兵乓球拍
                                     or answers.described_by_record(subject, main))   # 撸铁手套: 健身手套
        # (a need described is answered by meaning, unless it asks outright for goods of another kind than those
        # found: 跑步穿的大裤衩 is not 缓震跑步鞋; 踢球用的插板 may be 足球护腿板)
        described = asked.describes_need and not (asked.asked_described
                                                  and not answers.same_kind(subject, main.product_name))
        if subject and not asked.products and not described and not synonym \
                and (not covers(subject, main.product_name) or asked.foreign_qualifier):   # 拳击手套 is not 健身手套
            # the search was confident, and what it found is the kind of thing asked for under another name
            # (运动鞋 → 跑步鞋, 越野跑鞋): those products, not "not sold"; else a near miss (篮球架 → 篮球)
            def alike(product: Product) -> bool:   # the same kind by its head, or by the dictionary (背囊 → backpack)
                return (answers.same_kind(subject, product.product_name) and not asked.foreign_qualifier) \
                    or answers.dictionary_synonym(subject, product) \
                    or answers.written_in_full(subject, product.product_name)   # 游泳眼镜: 泳镜
            kind = [findings.products[p] for p in order if alike(findings.products[p])]
            if kind and alike(main):
                return (*answers.kind_answer(subject, kind[:KIND_LISTED]), AnswerStatus.GROUNDED)
            return (*answers.related_answer(subject, [main]), AnswerStatus.GROUNDED)
        # 有能计数的吗: whether the shop has one that does — the product, its price and stock, not only the fact
        wants_price = bool(asked.asks & {Ask.PRICE, Ask.PROMOTION} or asked.quantity or asked.first_purchase
                           or _HAS_ONE_THAT.search(asked.text))
        attribute: tuple[str, list[str]] | None = None
        if Ask.SPEC in asked.asks or answers.counts_a_unit_of(main, asked.text):
            # (the price part, when there is one, states the stock itself)
            attribute = answers.spec_answer(main, asked.attribute_question, with_price=False,
                                            with_stock=Ask.STOCK in asked.asks and not wants_price)
            if not wants_price and not _THRESHOLD.search(asked.text):
                return (*attribute, AnswerStatus.GROUNDED)
        elif Ask.BRAND in asked.asks and not asked.asks & {Ask.PRICE, Ask.PROMOTION}:
            return (*answers.brand_answer(main), AnswerStatus.GROUNDED)
        planned = self._promotion_plan(asked, main, findings, called)
        if isinstance(planned, ModelReply):
            return planned
        if planned is None:
            planned = self._price_part(asked, findings, wants_price)
        if attribute is not None:   # both parts: the attribute asked, then the price or the plan
            return attribute[0] + planned[0], attribute[1] + planned[1], planned[2]
        return planned

    @staticmethod
    def _price_part(asked: Intent, findings: answers.Findings, wants_price: bool) -> tuple[str, list[str], str]:
        question = asked.text
        wants_more = (not wants_price and Ask.STOCK not in asked.asks and len(findings.products) > 1
                      and asked.describes_need)
        counts = {asked.quantity, *asked.quantities.values()}
        # a figure of the customer's own, not a count of 块 read as pieces (三块瑜伽砖多少钱)
        claimed = any(m.value is not None and m.kind in (MONEY, DISCOUNT) and m.value != asked.total_budget
                      and not (m.text.rstrip().endswith("块") and m.value in counts) for m in find_mentions(question))
        return (*answers.product_answer(findings, wants_price=wants_price, wants_alternatives=wants_more,
                                        claimed_other_figure=claimed, per_unit=bool(_PER_UNIT.search(question)),
                                        subject=asked.subject, budget=asked.total_budget),
                AnswerStatus.GROUNDED)

    def _promotion_plan(self, asked: Intent, main: Product, findings: answers.Findings,
                        called: list[str]) -> ModelReply | tuple[str, list[str], str] | None:
        """What a shop assistant works out from the promotions: how many to buy to receive N under 买X送Y,
        and how far a quantity is from a threshold (满200包邮, 满500减100, 两支及以上) — each a verified tool."""
        promos = findings.promotions.get(main.product_id, [])
        if not promos:
            return None
        plans = [p for p in findings.plans if getattr(p, "product_id", None) == main.product_id
                 or getattr(getattr(p, "product", None), "product_id", None) == main.product_id]
        base, cites = answers.product_answer(findings, wants_price=False, wants_alternatives=False)
        if _THRESHOLD.search(asked.text) and any(p.minimum_spend or p.minimum_quantity for p in promos):
            if "calculate_threshold_gap" not in called:
                promo = next((p for p in promos if p.discount_type in (DiscountType.FREE_SHIPPING,
                                                                        DiscountType.FIXED_REDUCTION)
                              and _THRESHOLD_WORDS[p.discount_type].search(asked.text)), None)
                return self._call("calculate_threshold_gap", {
                    "product_id": main.product_id, "current_quantity": asked.quantity or 0,
                    "is_first_purchase": asked.first_purchase,
                    **({"promotion_id": promo.promotion_id} if promo else {})})
            for plan in plans:
                if isinstance(plan, ThresholdPlan):
                    text, more = promotion_answers.threshold_answer(plan)
                    return f"{base}{text}", cites + more, AnswerStatus.GROUNDED
                if isinstance(plan, QuoteRefusal):
                    return f"{base}{promotion_answers.threshold_refusal_answer(plan)}", cites, AnswerStatus.GROUNDED
        # 买三送一 and 4 wanted: paying for fewer may receive enough (below X+Y, paying for all is cheapest)
        free = any(p.discount_type == DiscountType.BUY_X_GET_Y and p.minimum_quantity and p.discount_value
                   and asked.quantity and asked.quantity >= p.minimum_quantity + int(p.discount_value)
                   for p in promos) and not buys_a_count(asked.text)   # (买6盒: six paid for, the free ones on top)
        if free:
            if "calculate_units_to_receive" not in called:
                return self._call("calculate_units_to_receive", {
                    "product_id": main.product_id, "units_wanted": asked.quantity or 1,
                    "is_first_purchase": asked.first_purchase})
            for plan in plans:
                if isinstance(plan, ReceivePlan):
                    text, more = promotion_answers.receive_answer(plan)
                    return f"{base}{text}", cites + more, AnswerStatus.GROUNDED
        return None

    @staticmethod
    def _premises_only(asked: Intent) -> bool:
        """The shop's premises asked about with no goods named (有实体店吗): no record says anything of them."""
        return asked.premises and not asked.names_goods

    @staticmethod
    def _about_goods_received(asked: Intent) -> bool:
        """A complaint about goods (收到的篮球是漏气的): the returns policy says what can be done."""
        return Ask.COMPLAINT in asked.asks and Ask.POLICY not in asked.asks and bool(asked.products or asked.goods)

    def _first_step(self, asked: Intent, focus: list[str], question: str) -> ModelReply:
        """Every part's first call at once: the policy, the orders and the product part run together."""
        if Ask.MODIFY in asked.asks:
            return self._submit(answers.REFUSE_CHANGE, [])
        if Ask.INJECTION in asked.asks:
            return self._submit(answers.REFUSE_INJECTION, [])
        if self._premises_only(asked) \
                and not asked.asks & {Ask.ORDER, Ask.POLICY, Ask.HUMAN, Ask.COMPLAINT, Ask.SPENDING}:
            return self._submit(answers.PREMISES, [], AnswerStatus.INSUFFICIENT)
        calls: list[tuple[str, dict[str, Any]]] = []
        if Ask.ORDER in asked.asks:
            order_id = _ORDER_ID.search(asked.text.upper())
            calls.append(("list_my_orders", {"order_id": order_id.group(1)} if order_id else {}))
        topics = asked.policy_topics[:2] if Ask.POLICY in asked.asks else ()
        if Ask.HUMAN in asked.asks and "service" not in topics:
            topics = (*topics, "service")
        if topics:
            calls += [("search_knowledge", {"query": asked.text[:200], "topic": topic}) for topic in topics]
        elif Ask.POLICY in asked.asks:
            calls.append(("search_knowledge", {"query": asked.text[:200]}))
        elif self._about_goods_received(asked):   # 收到的篮球漏气: what the shop does about a faulty item
            calls.append(("search_knowledge", {"query": asked.text[:200], "topic": "returns"}))
        if self._has_product_part(asked, focus):
            calls += self._product_first(asked, focus, question)
        if calls:
            return self._calls(calls)
        if Ask.OFF_TOPIC in asked.asks:
            return self._submit(answers.OFF_TOPIC, [])
        if Ask.COMPLAINT in asked.asks:
            return self._submit(answers.APOLOGY, [])
        if Ask.BARGAIN in asked.asks:
            return self._submit(answers.NO_BARGAIN_WHICH, [])
        if asked.asks & {Ask.GREETING, Ask.THANKS}:
            return self._submit(answers.THANKS if Ask.THANKS in asked.asks else answers.GREETING, [])
        return self._submit(answers.CLARIFY, [], AnswerStatus.INSUFFICIENT)

    @staticmethod
    def _named_within_budget(asked: Intent) -> bool:
        """Products named with a budget (not a brand or category list, unless two are named: 护具60以内 护膝护腕选哪个):
        which of them the budget allows."""
        # 200以内的篮球 (a word that ends longer names) or 200以内有啥: a list of the kind, not those products
        return bool(asked.products) and (asked.max_price is not None or asked.min_price is not None) \
            and Ask.COMPARE not in asked.asks and (not asked.category or len(asked.products) >= 2) \
            and not asked.describes_need \
            and not asked.names_a_kind and not LIST_REQUEST.search(asked.text) \
            and not asked.too_dear   # 那个篮球有点贵 有没有便宜点的篮球: basketballs below its price

    @staticmethod
    def _listing_words(asked: Intent) -> str:
        """What a listing searches for: the goods named (within the category, when one is named too: 跑步用的
        腰包, 游泳用的眼镜), unless a category or brand says it all."""
        named = " ".join(noun_stem(g) for g in (*asked.named, *asked.goods) if not unspecific(g))   # 垫子: 垫
        if asked.category and named and not asked.brand:
            return named
        if asked.category or (asked.brand and not asked.products):
            return ""
        if asked.describes_need and asked.wanted and goods_head(asked.wanted) not in asked.goods:
            return asked.wanted   # a story, then 想买个能分开装的包: what it wants, not the story's nouns
        return named

    @staticmethod
    def _listing_filters(asked: Intent, words: str) -> dict[str, Any]:
        filters = {"max_price": None if asked.max_price is None else str(asked.max_price),
                   "min_price": None if asked.min_price is None else str(asked.min_price),
                   "brand": asked.brand, "category": asked.category}
        return {"query": words[:200], "top_k": 10, "sort": asked.sort, "in_stock": asked.in_stock,
                **{k: v for k, v in filters.items() if v is not None}}

    @staticmethod
    def _product_first(asked: Intent, focus: list[str], question: str) -> list[tuple[str, dict[str, Any]]]:
        """The product part's first calls; none when there is no product to look up (then ask which)."""
        if len(asked.products) >= 2 or OfflineModel._named_within_budget(asked):   # named with a budget: verified,
            return [("get_product_details", {"product_ids": list(asked.products)})]  # the budget read after
        if asked.listing:
            words = OfflineModel._listing_words(asked)
            if not words and asked.describes_need and not (asked.category or asked.brand or asked.superlative):
                words = question   # a need told in a sentence, with a budget: search by the sentence
            elif not words and asked.describes_need and asked.category and asked.unwanted \
                    and not any(w in asked.text for w in (asked.category, *CATEGORY_WORDS.get(asked.category, ()))):
                # 想在家练练臀腿，哑铃壶铃这种就算了: the rest of their category (not said: theirs), by the need told
                words = _without_unwanted(asked, question)
            elif not words and asked.describes_need and asked.category and not asked.brand \
                    and (does := _WHAT_IT_DOES.search(wanted_phrase(asked.text))):
                words = does.group("does")   # 他每天都去跑步，想送他个能测心率、看配速的东西: of that category, what it does
            return [("search_products", OfflineModel._listing_filters(asked, words))]
        if asked.several and not asked.products:
            return [("search_products", {"query": part[:200], "top_k": 3}) for part in asked.parts[:5]]
        if asked.products:   # the customer named a product: verify it, no retrieval guess needed
            return [("get_product_details", {"product_ids": list(asked.products)})]
        if focus and (asked.follow_up or asked.names_nothing) and not (asked.browsing and _SHOP_SELLS.search(asked.text)):
            return [("get_product_details", {"product_ids": focus})]   # (你们都卖些啥 after a product: the shop's goods)
        if asked.browsing:   # 有什么推荐的, 你们店有啥: what the shop sells, and a question that narrows it
            return [("list_categories", {})]
        if asked.names_nothing and asked.leans_back:
            return []   # 那买三个呢 with nothing discussed yet: ask which product
        # the customer's own words: the router embedded them already, so the search reuses that vector
        # (what it rules out is no search word: 哑铃壶铃这种铁家伙就算了 would find them first)
        return [("search_products", {"query": _without_unwanted(asked, question)[:200], "top_k": 3})]


def _without_unwanted(asked: Intent, question: str) -> str:
    """The question without the names of what it rules out (哑铃壶铃这种铁家伙就算了: no search for them)."""
    return functools.reduce(lambda q, w: re.sub(re.escape(w), "", q, flags=re.I), asked.unwanted, question)


# goods wanted by what they do (能测心率、看配速的东西), not named
_WHAT_IT_DOES = re.compile(r"(?:能|可以|会|用来)(?P<does>[^的]{1,12})的(?:东西)?$")

