"""One reader of a customer message: what it names (products, several; brand; category), how many of
each, the budget, first purchase, and what it asks (price, comparison, listing, spec…). Used by the
turn (to prepare evidence) and by the offline model. Deterministic: catalog words through jieba, the
numerals through guardrails.figures, traditional characters and English brand names folded first."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from functools import lru_cache

import jieba
import jieba.posseg

from agent.cantonese import as_mandarin
from agent.counts import budget, english_numbers, for_each_person, quantities
from agent.mentions import (
    FULLEST,
    MEASURE_WORDS,
    PAYING,
    PRICE_WORDS,
    Reference,
    asks_for_goods,
    clause_start,
    dictionary_tag,
    extended_names,
    framed_objects,
    goods_phrases,
    is_asking_verb,
    joined_goods,
    never_goods,
    reference,
    tells_only_whom,
    tells_something,
    without_asking_lead,
)
from agent.ruled_out import THE_REST, RuledOut, is_marker, ruled_out
from agent.vocabulary import CATEGORY_WORDS, Vocabulary, base_name, singular_words
from db.catalog import PRICE_SORTS
from guardrails.figures import MEASURE, NUM
from guardrails.roles import FIRST_PURCHASE_WORDS, first_purchase_told
from retrieval.bridge import senses
from retrieval.glosses import gloss, latin_words, names_a_thing
from retrieval.text import NOUN_SUFFIXES, fold, is_han, pinyin_of
from retrieval.thesaurus import files_as_body_part, names_no_goods

jieba.setLogLevel(logging.WARNING)


class Ask(StrEnum):
    PRICE = "price"
    PROMOTION = "promotion"
    STOCK = "stock"
    SPEC = "spec"
    BRAND = "brand"
    COMPARE = "compare"
    LIST = "list"
    POLICY = "policy"
    ORDER = "order"
    MODIFY = "modify"
    GREETING = "greeting"
    THANKS = "thanks"
    BASKET = "basket"
    SPENDING = "own_spending"
    HUMAN = "human"
    COMPLAINT = "complaint"
    BARGAIN = "bargain"
    INJECTION = "injection"
    OFF_TOPIC = "off_topic"


# The router's labels (agent/routing.py, learned from examples) as the reader's asks.
LABEL_ASKS = {"price": Ask.PRICE, "promotion": Ask.PROMOTION, "stock": Ask.STOCK, "attribute": Ask.SPEC,
              "compare": Ask.COMPARE, "basket": Ask.BASKET, "listing": Ask.LIST, "order_status": Ask.ORDER,
              "own_spending": Ask.SPENDING, "human": Ask.HUMAN, "complaint": Ask.COMPLAINT, "bargain": Ask.BARGAIN,
              "injection": Ask.INJECTION, "off_topic": Ask.OFF_TOPIC, "greeting": Ask.GREETING, "thanks": Ask.THANKS}
PRODUCT_ASKS = frozenset({Ask.PRICE, Ask.PROMOTION, Ask.STOCK, Ask.SPEC, Ask.BRAND, Ask.COMPARE, Ask.BASKET, Ask.LIST})


_ASKS: tuple[tuple[Ask, re.Pattern[str]], ...] = (
    (Ask.MODIFY, re.compile(r"(改|修改|调整|设置|设为|调成|改成|降到|降为|删除|删掉|清空|清零|上架|下架).{0,12}(价|价格|库存|优惠|活动|折扣|商品|金额|订单|数据)"
                            r"|(价格|库存|优惠|活动|金额|数据库).{0,8}(改|修改|调整|设为|改成|调成|删除|清空|清零)")),
    (Ask.ORDER, re.compile(r"订单|我的单|我买的|下的(?:[那这]一?[个笔]?)?单|[那这]一?[个笔]?单(?![价独])|到哪了|发(?:货|出去)?了?(?:没|吗|么)|(?:咋|怎么)还没(?:到|发|收到)|发货了吗|物流|单号|(?:上[次回]|那次)买|(?:之前|以前)买的?(?=[那这])|买过(?:些|了)?(?:什么|啥)|买过哪些|最近买了|上一单|(?:几|多少)个?单(?!价)")),
    (Ask.POLICY, re.compile(r"退货|退款|换货|退换|发货|快递|配送|几天到|多久到|发票|质保|保修|售后|支付|付款|"
                            r"微信支付|支付宝|货到付款|客服|人工|营业时间|下班|上班|尺码怎么选|尺码建议|选码|大半码|"
                            r"改地址|修改地址|收货地址|鞋码对照|脚长|量脚|运费|邮费|补开|换开|抬头|自动取消|多久要付款")),
    (Ask.COMPARE, re.compile(f"哪一?[{MEASURE_WORDS}]|区别|对比|比较(?![胖瘦壮宽窄肥高矮])|不同|差别|比哪|还是"
                             r"|\bwhich (?:one|is)\b|\bcompared?\b|\bdifference\b|\bversus\b|\bvs\b")),
    # (有啥优惠, 有什么区别: the aspect asked of goods, not a list of them)
    (Ask.LIST, re.compile(r"(?:有哪些|有什么|有啥|哪些|都有)(?!优惠|活动|折扣|促销|赠品|区别|不同|差别|颜色|尺码|款式|"
                          r"要求|讲究|功能|用处|作用|好处|优点|缺点|问题)|列一下|推荐几|[有卖](?:哪|几)几?[款种类样]|"
                          r"卖(?:些|点)?(?:啥|什么)(?!价)")),
    (Ask.SPEC, re.compile(r"尺码|尺寸|多大|多重|重量|总重|净重|材质|容量|多长|几号|规格|参数|多高|多宽|多厚|面料|续航|几码|码数|"
                          r"厚不厚|厚度|薄不薄|长不长|宽不宽|高不高|"
                          r"(?:什么|啥)码|(?:哪些|哪几|几个|几种|多少)个?(?:码|尺码|号|尺寸)|"
                          r"[一单](?:只|个|双|对|副|套|盒|支)[^，,。？?！!]{0,6}还是[一两]?(?:只|个|双|对|副|套|盒|支)|"
                          r"有\s*(?:\d{2}(?:\.5)?\s*[码号]|\d?x{0,3}[sml]\s*码?)\s*的?\s*(?:吗|么|嘛|不|没)|"
                          r"穿\s*\d{2}(?:\.5)?\s*[码号]?的?\s*(?:有没有|有吗|有么|有不|有嘛|能穿|可以|行)|是.{1,6}还是|几公斤|多少公斤|几斤|多少斤|几克|多少克|几升|多少毫升|装(?:多少|几|得下)|"
                          r"how heavy|weight|material|made of|waterproof|what size|sizes|capacity|how big|how long|"
                          r"how many people|suitable|适不适合|适合(?:这个|这种|那个)?(?:年纪|年龄|几岁|多大|(?:什么|啥)人)|"
                          r"适合[^，,。？?！!]{0,8}?(?:岁|年纪|年龄)[^，,。？?！!]{0,3}(?:吗|么|不)|"
                          # a unit's content (一罐几个, 一盒有多少只, 几个装)
                          r"一\s*(?:罐|盒|筒|套|包|袋|箱|组)\s*(?:有|装|是)?\s*(?:几|多少)\s*(?:个|只|根|条|双|片)?|"
                          r"(?:几|多少)(?:个|只|条|根)装")),
    (Ask.STOCK, re.compile(r"库存|有货|现货|还有吗|有没有货|缺货|卖完|卖光|卖没|断货|售罄|没货|脱销|还有货|还有几|还剩|剩几|剩多少|还有多少|存货|货[多少]|"
                           r"剩[的得下]?(?:更|比较)?[多少]|(?<![a-z])(?:in )?stock(?![a-z])|(?<![a-z])available(?![a-z])")),
    (Ask.BRAND, re.compile(r"(?:什么|啥)牌子|哪个牌子|品牌|牌子")),
    (Ask.PROMOTION, re.compile(r"优惠|活动|打折|折扣|促销|满减|赠|送(?:什么|啥|东西|点)|有(?:没有)?送(?!货|到|上门)|附送|"
                               r"包邮|划算|新客|首单|首次|第一次")),
    (Ask.PRICE, re.compile(PRICE_WORDS + r"|价钱|售价|几块|多少元|报价|到手|总价|一共|合计|多少|贵|便宜|元吗|块吗|"
                                         r"(?<![a-z])(?:how much|price|money|cost)(?![a-z])")),
)
ASK_PATTERNS = dict(_ASKS)
# a request for a list, read by the offline model beside a budget: the reader's list words, any 推荐, English
LIST_REQUEST = re.compile(f"{ASK_PATTERNS[Ask.LIST].pattern}|推荐|list|what .* do you have", re.I)
_GREETING = re.compile(r"^\s*(你好|您好|在吗|在么|hi|hello|嗨|哈喽|早上好|晚上好|下午好|谢谢|感谢|好的|ok|再见|拜拜)"
                       r"[呀啊哦呢吗！!。.~，,\s]*$", re.I)
_THANKS = re.compile(r"谢谢|感谢|好的|ok|再见|拜拜", re.I)
FIRST_PURCHASE = FIRST_PURCHASE_WORDS   # one word list, shared with the validator
# 便宜点的跑鞋 / 有没有更便宜的: cheaper goods asked for (not 能便宜点吗, a lower price asked, nor 便宜的话)
# 有便宜点能装衣服的包吗: a having question about cheaper goods, described between 便宜点 and 的
_CHEAPER_GOODS = re.compile(r"更便宜|便宜(?:一)?[点些]?的(?!话)|有(?:没有)?便宜(?:一)?[点些][^\s，,。？?！!的]{1,12}的(?!话)|平价")
_SORTS = (("price_asc", re.compile(rf"最便宜|(?<!买)最实惠|最低价|(?:价格|价钱)最低|从低到高|由低到高|价格低|便宜的排前|"
                                   rf"{_CHEAPER_GOODS.pattern}")),
          ("price_desc", re.compile(r"最贵|最高档|(?:价格|价钱)最高|从高到低|由高到低|价格高")),
          ("stock_desc", FULLEST))
# Which kinds there are of goods a name names (篮球有哪几种, 跑步鞋有哪些, 足球有几款), not an attribute (有哪些颜色)
_KINDS_ASKED = re.compile(r"(?:哪|几)几?(?:种|款|类|样|个牌子|个品牌)(?!规格|尺码|颜色|型号|码|号|尺寸|库存|货|够)"
                          r"|(?:有|都有)哪些(?=$|[？?吗呢啊呀，,\s]|可以?选|能选|可挑|选择)|有(?:什么|啥)(?:款|种|牌子|品牌)")
_SAID_OF_POINTED = re.compile(rf"(?P<what>[\u4e00-\u9fff]{{1,8}})的?[那这][{MEASURE_WORDS}]")   # 容量大的那个
_KINDS_BEFORE = re.compile(r"(?:哪些|哪几[种款样类]|什么[款种样]的?|几[种款样]|啥[款种样]的?)$")   # 有哪些足球: kinds, then the name
# A pointer with a kind of goods (那个球, 这双鞋): the goods named or shown, never a thing not sold
_POINTED_THING = re.compile(f"[那这哪][{MEASURE_WORDS}]?[\u4e00-\u9fff]")
# Goods asked for beside a greeting the router read alone (推荐推荐, 随便瞅瞅, 主打什么, 卖些啥)
_BROWSE_ASKED = re.compile(r"推荐|随便(?:看|瞅|逛|瞧)|(?:看看|瞅瞅|逛逛|瞧瞧)|主打|卖(?:些|点)?(?:啥|什么)|有(?:啥|什么)(?:好|卖|推荐)")
# Looking at goods (我想看看, 推荐, 有啥): with something ruled out, the rest is listed
_LOOKING = re.compile(r"看看|推荐|有啥|有什么|列一下|都有")
# The shop's goods as a whole (你们店里最贵的东西, 全店最便宜的): the catalog, not a kind or what was shown
_WHOLE_SHOP = re.compile(r"店里|店内|你们家|你家|你们这|全店|整个店|本店|的东西|的商品|的产品|的宝贝|的玩意")
_IN_STOCK = re.compile(r"有货的|现货的|有库存的|能马上发")
_CLAUSE = re.compile(r"[^\s，,。.!！？?；;～~]+")   # a clause of a message: between its punctuation and spaces
_SEPARATORS = re.compile(r"和|跟|与|及|、|还是|或者|或|加上|加|以及|,|，|对比|比较|比|vs", re.I)
_CATEGORY_TAIL = re.compile(r"用品|装备|器材|类|相关|有关|这块|那块|这一块|那一块|(?:要|需要)用的(?:东西|装备)|的东西|的商品|的产品|的装备|的用品|的器材|东西|产品|商品")


def _length(text: str) -> int:
    """How long a message is, in words a Chinese reader would count: each character, but an English word
    or a number as one (a 10-character English question is two words, not a sentence)."""
    return len(re.sub(r"\s+", "", re.sub(r"[a-z]+(?:'[a-z]+)?|\d+(?:\.\d+)?", "x", text)))


@dataclass(frozen=True)
class Intent:
    text: str                                   # folded: simplified characters, English brands added
    products: tuple[str, ...] = ()              # product ids named, in order of appearance
    parts: tuple[str, ...] = ()                 # the phrases of a message about several things
    quantities: dict[str, int] = field(default_factory=dict)   # product id → units asked about
    quantity: int | None = None                 # units asked about when one product is meant
    max_price: Decimal | None = None
    min_price: Decimal | None = None
    brand: str | None = None
    category: str | None = None
    first_purchase: bool = False
    asks: frozenset[Ask] = frozenset()
    follow_up: bool = False                     # about the focus product: names nothing new
    in_stock: bool = False                      # 有货的 / 现货的: only products in stock
    sort: str = "relevance"                     # 最便宜的 / 从高到低 / 库存最多: how a listing is ordered
    subject: str = ""                           # the thing asked about, when it is a short noun phrase
    goods: tuple[str, ...] = ()                 # noun phrases that may name goods no catalog word covers
    near_miss: str = ""                         # a catalog name inside a noun for another thing (足球门)
    reference: Reference | None = None          # 第二个 / 便宜的那个 / 这个: points back at what was shown
    labels: frozenset[str] = frozenset()        # what the router read the message to ask (policy topics too)
    named: tuple[str, ...] = ()                 # the catalog words the message used, as written
    leans_back: bool = False                    # elliptical, a pointer or a bare quantity: needs a focus
    names_a_kind: bool = False                  # with a budget: a word named ends longer names too (篮球: 室外耐磨篮球)
    # what qualifies the subject, in characters no product name uses (滑雪板: 雪): not a kind the shop sells
    # under another name (运动鞋 → 跑步鞋) but another thing (a snowboard is not a skateboard)
    foreign_qualifier: str = ""
    in_pairs: frozenset[str] = frozenset()      # products whose own count is in pairs (护膝来一对, 两双)
    quantity_in_pairs: bool = False             # the overall count is (行，就登山杖吧，买一对)
    asked_for: str = ""                         # goods a having or selling question asks for (…有蛋白粉卖吗)
    wanted: str = ""                            # goods a buying clause asks for, as described (…想买个能分开装的包)
    premises: bool = False                      # asks about the shop's premises (有实体店吗, 店在哪, 能去店里看吗)
    # the thing asked for and what of it the shop sells, its qualifier aside, when a search refuses the thing:
    # (滑雪板, 滑板) — 雪 is in no product name; (击剑用的手套, 手套) — gloves are sold, not for fencing
    related: tuple[str, str] = ("", "")
    # what is too dear, when cheaper goods are asked for after it (斯伯丁那个篮球有点贵 → 斯伯丁那个篮球): the
    # clause as written; the turn reads its product and caps the price there (then: that product's name)
    too_dear: str = ""
    superlative: bool = False   # 最便宜的球拍是哪个: the one at the top of the order by price, not the list
    # the subject's stem when it names a kind of goods, not one product: one character (包, 鞋子), or a word several
    # products' names end with and none is (球拍: 羽毛球拍, 乒乓球拍, 网球拍; 球鞋); read with the subject it was read of
    kind: str = ""
    ruled_out: RuledOut = RuledOut()   # what the customer does not want (除了耐克, 帐篷就不要了, 不是瑜伽垫)
    # a budget for the whole purchase of a count of one product (想买10个足球，预算1200够不够): not a price per unit
    total_budget: Decimal | None = None
    added: bool = False   # the count is more of what was being bought (再加一个, 再来两个): added to the count before
    unwanted: tuple[str, ...] = ()   # the catalog words written for what is ruled out (哑铃壶铃…就算了): no search words
    # the attribute asked before, carried by a follow-up that asks none of its own (那健身垫呢 after 瑜伽垫有多厚)
    carried_aspect: str = ""

    @property
    def attribute_question(self) -> str:
        """The message with the attribute carried over to it, as an attribute answer reads it."""
        return f"{self.text}，{self.carried_aspect}" if self.carried_aspect else self.text

    @property
    def policy_topics(self) -> tuple[str, ...]:
        return tuple(sorted(label.split(":", 1)[1] for label in self.labels if label.startswith("policy:")))

    @property
    def describes_need(self) -> bool:
        """A need told (我准备跑马拉松…, 爬山下坡膝盖疼) rather than a product named or goods asked for — nor a
        long question about nothing (新客第一单买的话多少钱)."""
        return not self.products and (_length(self.text) >= 10 or bool(self.goods) and not asks_for_goods(self.text)) \
            and not _only_asking(re.sub(r"[\s，,。.!！]+", "", self.text)) and not self.asked_outright \
            and not ((on := _ON_GOODS.search(self.text)) and self.subject and self.text.find(self.subject) > on.start()) \
            and tells_something(self.text) and not tells_only_whom(self.text)   # 想看看你们家的商品: shop talk, no need

    @property
    def asked_outright(self) -> bool:
        """The thing asked for in a clause of its own (滑雪板有吗，想冬天去崇礼; …想问问你们店里有蛋白粉卖吗): the rest
        is why, not a need."""
        return self._asked_alone(described=False)

    @property
    def asked_described(self) -> bool:
        """The thing asked for in a clause of its own with what it is for before it (跑步穿的大裤衩多少钱)."""
        return self._asked_alone(described=True)

    def _asked_alone(self, described: bool) -> bool:
        if not self.subject:
            return False
        if self.asked_for == self.subject:
            return True
        clauses = [c.group() for c in _CLAUSE.finditer(self.text)]
        if not described and self.wanted == self.subject \
                and any(self.subject not in c and _HAVING.search(c) and _only_asking(_THE_SHOP.sub("", c))
                        for c in clauses):
            return True   # 家里想添台跑步机，你们这有吗: the thing wanted, then whether the shop has it
        clause = next((c for c in clauses if self.subject in c), "")
        if clause != clauses[0] and (clause != clauses[-1] or not asks_anything(self.text)):
            return False   # 每周踢球，场地是室内的，硬地，五个人一边(，该买个啥球): a story going on, not what is asked
        before = "(?:[\u4e00-\u9fff]{1,8}的)" if described else ""
        found = re.search(f"{before}{re.escape(self.subject)}", clause)
        if found is None:
            return False
        # 那个跑步机你们有没有就是家里用的那种: a filler before the thing, and the kind described after it
        rest = _FILLER_BEFORE.sub("", clause[:found.start()]) + _KIND_AFTER.sub("", clause[found.end():])
        return not rest or _only_asking(rest)

    @property
    def tells_need(self) -> bool:
        """A need told (爬山下坡膝盖疼) that asks for no goods: never answered "not sold"."""
        return self.describes_need and not asks_for_goods(self.text)

    @property
    def names_goods(self) -> bool:
        """A product, goods, a near miss or a filter (budget, brand, category) is named."""
        return bool(self.products or self.goods or self.near_miss or self.filtered)

    @property
    def names_nothing(self) -> bool:
        """No product, no goods, no filter: a follow-up, or a question that needs its product named."""
        return not (self.names_goods or self.describes_need)

    @property
    def browsing(self) -> bool:
        """Help with goods asked for while naming nothing — no goods, need, filter or pointer back (有什么推荐的,
        你们都卖啥, 随便看看): what the shop sells is to be offered, not a product guessed from the words."""
        whom = tells_only_whom(self.text)   # 想给我爸挑个礼物: what he likes is still to be asked
        return (Ask.LIST in self.asks or whom) and self.names_nothing and self.reference is None \
            and (whom or not tells_something(self.text))   # 周末想去爬山 (after 有什么推荐的): a need, searched for

    @property
    def filtered(self) -> bool:
        """A budget, brand or category narrows what is asked about."""
        return bool(self.max_price is not None or self.min_price is not None or self.brand or self.category)

    @property
    def listing(self) -> bool:
        """A request for a list of products by budget, brand or category (or of a kind of goods named,
        有哪些跑鞋) rather than one product."""
        if self.ruled_out and Ask.LIST in self.asks and not self.products and (self.goods or self.category):
            return True   # 护具里除了护膝还有啥, 足球不要耐克的: the rest of a kind or category, listed
        if self.near_miss and not (Ask.LIST in self.asks and ASK_PATTERNS[Ask.LIST].search(self.text)) \
                and not any(word in self.near_miss
                            for word in (self.category, *CATEGORY_WORDS.get(self.category, ())) if word):
            return False   # 四人帐篷有吗 一家人出去露营: the thing asked is not sold, whatever the story's category
            # (足球用品 is the category's own goods: listed)
        # the cheapest or cheaper of a kind (最便宜的足球, 跑鞋哪双最便宜, 篮球有没有便宜点的): a list by price
        if self.superlative and self.reference is None and not (self.products or self.goods or self.filtered) \
                and _WHOLE_SHOP.search(self.text):
            return True   # 你们店里最贵的东西: the whole catalog in that order
        by_price = self.sort != "relevance" and Ask.COMPARE not in self.asks \
            and len(self.products) <= 1 and bool(self.products or self.goods) \
            and (self.reference is None or bool(self.goods))   # 最便宜的那个: the cheapest of a list shown
        filtered = self.filtered or by_price
        if not filtered:   # 有哪些跑鞋: a kind of goods named, not a product, and a list asked for
            return bool(Ask.LIST in self.asks and self.goods and not self.products and Ask.COMPARE not in self.asks
                        and ASK_PATTERNS[Ask.LIST].search(self.text))
        budget = self.max_price is not None or self.min_price is not None
        if len(self.products) == 1 and Ask.SPEC in self.asks and not budget \
                and ASK_PATTERNS[Ask.SPEC].search(self.text):
            return False   # 想买个帐篷去露营，weight多少: an attribute of the product named, not the category's list
        return bool(filtered) and (len(self.products) <= 1 or budget) and Ask.COMPARE not in self.asks \
            and (Ask.LIST in self.asks or not self.products or self.max_price is not None or by_price)

    @property
    def several(self) -> bool:
        return len(self.products) >= 2 or len(self.parts) >= 2



# Goods said to be too dear (太贵了, 有点贵, 贵了点), not a question about it (贵不贵, 不贵, 多贵)
_TOO_DEAR = re.compile(r"(?<![不多])贵(?![不吗么])(?:了|一?点|一?些)*")
_SUPERLATIVE = re.compile(r"最(?:便宜|贵|高档)|(?<!买)最实惠|最低价|(?:价格|价钱)最[低高]")   # (怎么买最实惠: a deal)   # the one cheapest or dearest, not a list by price


# Words as people type them online, and the words they are (有木有 = 有没有, 冬天跑步打底用滴, 神马, 肿么卖)
_ONLINE = {"木有": "没有", "神马": "什么", "肿么": "怎么", "滴": "的"}
_ONLINE_SPELLED = re.compile("|".join(_ONLINE))


def typed_spellings(text: str) -> str:
    """Words as people type them online written as they are (木有 → 没有, 用滴 → 用的), unless the character before
    makes a word of the dictionary with the first one (积木有吗: building blocks, asked for; 一滴, 水滴), or a lone
    character one with the character after it (滴滴)."""
    jieba.dt.check_initialized()   # its dictionary is read on first use
    def spelled(match: re.Match[str]) -> str:
        at = match.start()
        word = at and jieba.dt.FREQ.get(text[at - 1:at + 1]) or len(match.group()) == 1 \
            and at + 1 < len(text) and jieba.dt.FREQ.get(text[at:at + 2])   # (滴滴打车: a word of its own)
        return match.group() if word else _ONLINE[match.group()]
    return _ONLINE_SPELLED.sub(spelled, text)


# Whether the shop has the thing named, and nothing else: 有吗, 有没有, 还有货吗, 你家有卖不
_HAVING_ONLY = re.compile(r"(?:请问|你们|你家|店里|家里|这边)*还?有(?:没有|卖|货|现货)*(?:吗|么|嘛|不|没|没有|呢|啊|呀|哈|[?？!！~～]|\s)*")


# Pictographs, symbols and the joiners and selectors that build emoji (🏊‍♀️, 🛹, 😍): they say nothing of
# what a message asks, and would stand between its words and its end (滑板有吗🛹).
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u200D\uFE0E\uFE0F\U000E0020-\U000E007F]+")


def reading(text: str) -> str:
    """A customer's message as every reader of it reads it: folded (`fold`), its Cantonese words as Mandarin ones
    (仲有几多个 → 还有多少个) and without emoji."""
    return _EMOJI.sub(" ", as_mandarin(fold(text))).strip()


def _brands_in_full(text: str, vocabulary: Vocabulary) -> str:
    """The text with each brand said by its short form written in full (阿迪那款跑鞋 → 阿迪达斯那款跑鞋)."""
    for short, brand in vocabulary.brand_short_forms.items():
        if short in text and brand not in text:
            text = text.replace(short, brand)
    return text


def _without(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` without the catalog names found in it, and without spaces and punctuation."""
    for start, end, _ in sorted(spans, reverse=True):
        text = text[:start] + text[end:]
    return re.sub(r"[\s，,。.!！?？~～]+", "", text)


def _too_dear_apart(folded: str) -> tuple[str, str] | None:
    """(what is too dear, the rest) when cheaper goods are asked for after goods said to be too dear (加厚健身垫199有点贵
    有便宜点的垫子吗); None otherwise."""
    cheaper = _CHEAPER_GOODS.search(folded)
    dear = _TOO_DEAR.search(folded, 0, cheaper.start()) if cheaper else None
    if dear is None:
        return None
    what, rest = folded[:dear.start()].strip(" ，,。！!～~"), folded[dear.end():].strip(" ，,。！!～~")
    what = re.sub(r"(?:太|有点|有些|好|真|挺|蛮|就是|还是|实在)+$", "", what).strip()
    if not re.sub(f"[这那哪个款种一{MEASURE_WORDS}]", "", what):
        return None   # 这款太贵了: the product in focus, read as it was
    return (what, rest) if rest else None


def _named(text: str, vocabulary: Vocabulary) -> list[tuple[int, int, str]]:
    """Catalog names in the text; a name typed with a homophone (耐魔篮球, 羽毛球排) is that name, and a
    longer name heard that way wins over the shorter one written right (羽毛球排 is 羽毛球拍, not 羽毛球)."""
    if vocabulary.pattern is None:
        return []
    exact = [(m.start(), m.end(), vocabulary.product_of(m.group(0))) for m in vocabulary.pattern.finditer(text)]
    if exact:
        words = jieba.lcut(text)
        exact = [x for x in exact if not _straddles_a_body_part(words, x[0], x[1])]
    heard = _homophones(text, vocabulary)
    for start, end, pid in heard:
        overlapping = [x for x in exact if x[0] < end and start < x[1]]
        if all(x[1] - x[0] < end - start for x in overlapping):
            exact = [x for x in exact if x not in overlapping] + [(start, end, pid)]
    return sorted(exact + _english_named(text, vocabulary, exact)) if vocabulary.english else sorted(exact)


def _straddles_a_body_part(words: list[str], start: int, end: int) -> bool:
    """Whether a name found at start:end ends inside a word that begins inside it and the thesaurus files as a part
    of the body alone (护膝 in 能护膝盖: 护 + 膝盖): the message speaks of the knee, not of the product. (A word
    across a name and an asking word, 网球拍 in 网球拍卖多少钱, is jieba's misreading: the name stands.)"""
    at = 0
    for word in words:   # the message's jieba words, in order
        if start < at < end < at + len(word):
            return files_as_body_part(word)
        at += len(word)
        if at >= end:
            return False
    return False


def _english_named(text: str, vocabulary: Vocabulary, taken: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """English names recombined from a product's own English names (table tennis paddle, from 'ping pong
    paddle' and 'table tennis bat'): two or more words, every one a word of that product's names, the last
    one a word its names end with; the longest such phrase, and only when one product owns it."""
    found: list[tuple[int, int, str]] = []
    words = [(m.start(), m.end(), singular_words(m.group(0))[0]) for m in re.finditer(r"[a-z]+", text)]
    for end in range(len(words)):
        for start in range(max(0, end - 3), end):
            run = words[start:end + 1]
            if any(text[a:b].strip() for (_, a, _), (b, _, _) in zip(run, run[1:], strict=False)):
                continue   # only words next to each other
            if any(s < run[-1][1] and run[0][0] < e for s, e, _ in [*taken, *found]):
                continue
            owners = [pid for pid, every in vocabulary.english.get(run[-1][2], ())
                      if all(w in every for _, _, w in run)]
            if len(owners) == 1:
                found.append((run[0][0], run[-1][1], owners[0]))
                break
    return found


def _homophones(text: str, vocabulary: Vocabulary) -> list[tuple[int, int, str]]:
    """Spans of Chinese characters that sound like a catalog name they are not: three or more; two when one
    character is the name's own, in its place, and the pair is no word of the dictionary (蓝球 for 篮球,
    帐蓬 for 帐篷 — not 呼吸 for 护膝)."""
    if not vocabulary.sounds:
        return []
    syllables = [pinyin_of(ch) if "\u4e00" <= ch <= "\u9fff" else "" for ch in text]
    found = []
    for start in range(len(text)):
        if not syllables[start]:
            continue
        for length, names in vocabulary.sounds.get(syllables[start], ()):
            end = start + length
            key = " ".join(syllables[start:end])
            if end <= len(text) and key in names and text[start:end] not in vocabulary.names \
                    and (length > 2 or _misspelt_pair(text, start, vocabulary.chinese_names.get(names[key], ()))):
                found.append((start, end, names[key]))
    found.sort(key=lambda x: (x[0], -(x[1] - x[0])))
    kept: list[tuple[int, int, str]] = []
    for span in found:   # the longest at each place, no overlaps
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def _misspelt_pair(text: str, start: int, names: tuple[str, ...]) -> bool:
    """The two characters at `start`: one of them a two-character name of the product has in the same place,
    together no dictionary word (a typo, not another word that sounds the same), and not a piece of a longer
    word of the message (榄球 in 橄榄球)."""
    pair = text[start:start + 2]
    if not any(len(n) == 2 and (n[0] == pair[0] or n[1] == pair[1]) for n in names) or senses(pair):
        return False
    edges = _word_edges(text)
    return start in edges and start + 2 in edges   # the end of the message is an edge too


@lru_cache(maxsize=64)
def _word_edges(text: str) -> frozenset[int]:
    """Where the message's jieba words start (cut once for every pair of it that sounds like a name)."""
    return frozenset(itertools.accumulate((len(w) for w in jieba.lcut(text)), initial=0))


_GLUED = frozenset({"有", "吗", "呢", "是", "要", "吧", "能", "买", "来", "拿"})


def kind_written(text: str, vocabulary: Vocabulary, enders: frozenset[str] | None = None) -> tuple[str, ...]:
    """A kind of goods written as one Chinese character standing as a word (包多少钱, 鞋有吗): (kind,) or ().
    `enders`: the characters that may be one (default: those ending several products' names)."""
    kind = _kind_word(text, vocabulary, enders)
    return kind if kind and is_han(kind[0]) else ()


def _kind_word(text: str, vocabulary: Vocabulary, enders: frozenset[str] | None = None) -> tuple[str, ...]:
    """A kind of goods written as one character standing as a word (300以内的鞋, 有什么包): a character that ends
    several products' names (or one of `enders`); not a measure word after a count (一套, 两双) or after 多少/几
    (还剩多少套)."""
    kinds = vocabulary.kind_characters if enders is None else enders
    at = 0
    for word in jieba.lcut(text):
        start, at = at, at + len(word)
        kind = word if word in kinds else \
            word[0] if word[0] in kinds and word[1:] in _GLUED else \
            word[1] if len(word) == 2 and word[0] in "那这" + word[1] and word[1] in kinds \
            and not (word[0] in "那这" and word[1] in MEASURE_WORDS) else ""   # (这套: a pointer, not 手套)
        # (包有吗 cut as 包有 / 吗, 那球呢 as 那球 / 呢; 包包: a kind said twice, as people do)
        if kind and not re.search(f"(?:{NUM}|多少|几)\\s*$", text[:start]) \
                and not (is_asking_verb(word) and re.match(f"\\s*(?:{NUM}|几)\\s*{MEASURE}", text[at:])):
            return (kind,)   # (还剩多少套: a measure word asked; 也带一双: 带 buys, before a count)
    for word in latin_words(text):   # bags, shoes, rackets: the kind its dictionary senses end with (鞋子 → 鞋)
        kind = _english_kind(word, vocabulary) if word not in vocabulary.names else None
        if kind:
            return (kind[-1],)
    return ()


def _described_kind(text: str, phrase: str, vocabulary: Vocabulary) -> str:
    """The kind of goods written as one character right after a goods phrase and its 的 (能装衣服的包 → 包): the
    phrase describes it; else the phrase."""
    after = text[text.find(phrase) + len(phrase):]
    kind, then = after[1:2], after[2:3]
    ends = not then or not is_han(then) or then in "吗么嘛呢啊呀"   # the kind stands as a word of its own
    return kind if after[:1] == "的" and kind and kind in vocabulary.kind_characters and ends else phrase


def _english_kind(word: str, vocabulary: Vocabulary) -> str | None:
    """The Chinese word of a kind of goods an English word names (gloves → 手套, balls → 球): one of its first
    dictionary senses, 子 aside, that ends with a character ending several products' names; None if none."""
    for sense in gloss(word)[:3]:
        head = sense[:-1] if len(sense) > 1 and sense.endswith("子") else sense
        if len(head) <= 3 and head[-1] in vocabulary.kind_characters:
            return head
    return None


def _english_near_miss(text: str, vocabulary: Vocabulary) -> tuple[str, str]:
    """(the phrase, its qualifier's Chinese sense) for an English kind of goods qualified by a noun that none
    of the catalog's names or English names uses (boxing gloves: 拳击; golf balls: 高尔夫, 球 being the kind):
    another thing, as 拳击手套 is; ("", "") otherwise."""
    words = latin_words(text, each_once=False)
    english = {w for name in vocabulary.names if name.isascii() for w in name.split()}
    for before, word in reversed(list(itertools.pairwise(words))):   # the head noun is the last kind named
        kind = _english_kind(word, vocabulary)
        if kind is None:
            continue
        if before in english or not names_a_thing(before) or not gloss(before):
            break
        sense = gloss(before)[0]
        own = [ch for ch in sense if is_han(ch) and ch not in kind]
        # most of the sense's characters are the catalog's strangers (高尔夫球: 高尔夫; not 奔跑 for running)
        if 2 * sum(ch not in vocabulary.name_characters for ch in own) > len(own):
            return f"{before} {word}", sense
        break
    return "", ""


def _category(text: str, vocabulary: Vocabulary, spans, listing: bool) -> str | None:
    """A category word: as 足球用品/户外装备, or alone (服饰, 露营) in a request for a listing or with only asking
    words around it (护具有吗)."""
    if vocabulary.category_pattern is None:
        return None
    alone = None
    uses: set[str] = set()   # category words read as the use of goods asked (游泳用的浮板): no category said again
    for m in vocabulary.category_pattern.finditer(text):
        word = m.group(0)
        if _CATEGORY_TAIL.match(text, m.end()):
            return vocabulary.category_of[word]
        use = _USE_OF.match(text, m.end())
        clause_end = next((c.end() for c in _CLAUSE.finditer(text) if c.start() <= m.start() < c.end()), len(text))
        if use and (any(not unspecific(g) for g in goods_phrases(text[use.end() - 1:clause_end], []))
                    or vocabulary.category_pattern.match(text, use.end() - 1)):   # 打篮球用的护具: the 护具
            uses.add(word)
            continue   # 跑步穿的紧身裤: tights worn for running, of whatever category the shop files them under
        if word in uses:
            continue   # 有游泳用的浮板吗 刚学游泳: the sport again, in the story
        if text[m.end():m.end() + 1] == "的" and _after_verb(text, m.start()) \
                and (text[m.end() + 1:m.end() + 2] in vocabulary.kind_characters
                     or any(not unspecific(g) for g in goods_phrases(text[m.end() + 1:], []))):
            continue   # 能装衣服的包: clothes are what the bag holds, not the category to list
        held = [h for h in _HOLDING.finditer(text, 0, m.start()) if h.start() >= clause_start(text, m.start())]
        if held and (any(e <= held[-1].start() for _, e, _ in spans) or m.start() - held[-1].end() <= 1) \
                or _HELD_AFTER.match(text, m.end()):
            continue   # 想买个双肩包 装健身的鞋子衣服, 要装湿衣服, 干衣服塞一个包里: what goods hold, not the category
        # listed when a list is asked, or when the rest asks only about it (护具有吗, 护具多少钱: which there are)
        # (那护具呢: a follow-up's 那 says nothing of what)
        asked_alone = listing or _only_asking(re.sub(r"[\s，,。.!！]+|^(?:那么|那)", "", text[:m.start()] + text[m.end():]))
        if alone is None and asked_alone and (word not in vocabulary.names or use or _sport_asked(text, m.start(), m.end())) \
                and not any(s <= m.start() < e for s, e, _ in spans):   # (足球用的东西: the sport, not the ball)
            alone = vocabulary.category_of[word]
    return alone


_HOLDING = re.compile(r"装|放|塞|收纳|搁")   # verbs of what a container holds


def _after_verb(text: str, at: int) -> bool:
    """Whether the word right before `at` is a verb by jieba's dictionary (装 of 能装衣服; its tagger may call it a
    noun in context): what follows is the verb's object."""
    words = jieba.lcut(text[:at])
    return bool(words) and (dictionary_tag(words[-1]) or dictionary_tag(words[-1][-1])).startswith("v")


_QUESTION_REST = re.compile(r"几|多少|吗|么|怎|什么|哪|还")
GENERIC = frozenset({"东西", "商品", "产品", "货", "啥", "什么", "的", "宝贝", "玩意", "玩意儿", "装备", "用品", "器材", "用具"})


def goods_head(phrase: str) -> str:
    """What a goods phrase names, after what describes it (能分开装的包 → 包; '' for 护着点的)."""
    return phrase.rsplit("的", 1)[-1]


def unspecific(phrase: str) -> bool:
    """Whether a goods phrase names no kind of goods: its head is a generic word or ends with one (东西,
    健身小东西, 健身用的小东西) — what it is for may be said, what it is is not."""
    head = goods_head(phrase).lstrip(MEASURE_WORDS) or goods_head(phrase)   # 款货 (哪款货最多): 货
    return head in GENERIC or any(head.endswith(word) for word in GENERIC if len(word) >= 2)


# What is left of a comparison's clause once its names are out and that is not the need: joining words,
# particles, "more", and asking the price.
_NOT_THE_NEED = re.compile(r"[和跟与及或]|还是|比较|比起|相比|对比|比|更|最|呢|吗|啊|呀|吧|的话|请问|哪个好|有什么|有啥|什么"
                           r"|多少钱|价格|价钱|售价|几块|怎么卖|\s")


def need_in_comparison(asked: Intent) -> str:
    """The need a comparison asks about (双肩包和干湿分离包哪个能放湿衣服 → 能放湿衣服): its clause with the
    comparing word, less the catalog words named before that word and the words around them; "" when
    nothing is left but a word or two (哪个好)."""
    compare = ASK_PATTERNS[Ask.COMPARE]
    for clause in re.split(r"[，,。？?！!；;]", asked.text):
        found = compare.search(clause)
        if not found:
            continue
        before = clause[:found.start()]   # the names come before 哪个; after it, 保护膝盖 holds 护膝 as letters only
        for name in sorted(asked.named, key=len, reverse=True):
            before = before.replace(name, " ")
        rest = _NOT_THE_NEED.sub("", before + " " + clause[found.end():])
        return rest if sum(map(is_han, rest)) >= 3 else ""
    return ""


def covers(subject: str, product_name: str) -> bool:
    """Whether a product is the thing asked about: '足球门' is not 足球; '跑不鞋' (a typo) is 跑步鞋;
    '壶铃几公斤' is 壶铃 with a question the reader did not know."""
    name = fold(product_name)
    if not subject or subject in name:
        return True
    shared = next((n for n in (name, base_name(name)) if subject.startswith(n)), None)
    if shared and _QUESTION_REST.search(subject[len(shared):]):
        return True
    head = noun_stem(jieba.lcut(subject)[-1])   # 羽毛球用的鞋子: 鞋 of 羽毛球鞋
    return head in name or pinyin_of(head) in pinyin_of(name) or _in_order(head, name)


ALL_SENSES = 40   # every sense a dictionary entry lists, not only its first few


def noun_stem(word: str) -> str:
    """A noun without its suffix 子 or 儿 where the dictionary says both mean one thing (鞋子 → 鞋, 拍子 → 拍: a
    racket), or holds it only without its 儿 (拐棍儿 → 拐棍); 包子, a bun, is not 包, a bag."""
    if len(word) < 2 or word[-1] not in NOUN_SUFFIXES:
        return word
    whole, stem = senses(word, ALL_SENSES), senses(word[:-1], ALL_SENSES)   # 拍子 and 拍 share racket, far down 拍's
    if word[-1] == "儿" and stem and not whole:
        return word[:-1]   # 拐棍儿: the spoken 儿 typed after a word the dictionary holds without it
    return word[:-1] if set(whole) & set(stem) else word


def _in_order(short: str, long: str) -> bool:
    """双肩包 ~ 双肩运动背包: every character of the short form, in order, in the long one."""
    rest = iter(long)
    return len(short) >= 2 and all(ch in rest for ch in short)


def _joined(text: str, goods: tuple[str, ...]) -> tuple[str, ...]:
    """The goods a message lists with joining words (冰爪和冰镐, 高尔夫球、球杆或球包): the longest such run,
    when it holds two or more; () otherwise."""
    best: list[str] = []
    run: list[str] = []
    end = -1
    for g in goods:
        at = text.find(g, max(end, 0))
        if at < 0:
            continue
        run = [*run, g] if run and 0 < at - end <= 1 and text[end:at] in "和跟与及或、,，" else [g]
        end = at + len(g)
        best = max(best, run, key=len)
    return tuple(best) if len(best) >= 2 else ()


def read(text: str, vocabulary: Vocabulary | None = None, *, has_focus: bool = False,
         labels: Iterable[str] | None = None, own: frozenset[str] = frozenset()) -> Intent:
    """Read one customer message against the catalog's vocabulary. `labels`: what the router (a model
    learned from examples) read the message to ask; without them the asks come from word rules alone.
    `own`: words after a product's name that its own record holds (a part or aspect of it, not a near miss)."""
    vocabulary = vocabulary or Vocabulary({})
    folded = typed_spellings(english_numbers(reading(text)).replace("俩", "两个").replace("仨", "三个"))
    folded = _brands_in_full(folded, vocabulary)
    if (apart := _too_dear_apart(folded)) is not None:   # 保温杯太贵了 有便宜点的水杯吗: the ask is the second clause
        dear, ask = apart
        return dataclasses.replace(read(ask, vocabulary, has_focus=has_focus, labels=labels, own=own), too_dear=dear)
    written = vocabulary.brands_at(folded)
    spans = _brand_pointed(folded, _brand_before(folded, _of_its_line(folded, _named(folded, vocabulary), vocabulary),
                                                 vocabulary, written), vocabulary, written)
    ruled = ruled_out(folded, spans, vocabulary.brands, vocabulary.products_of_kind)
    rest_asked = bool(THE_REST.search(folded) or _LOOKING.search(folded))   # 其他的还有什么, 我想看看
    # goods asked for besides a brand ruled out (想买个球，耐克的就不考虑了; 篮球不要斯伯丁的…有合适的吗): the rest
    goods_asked = rest_asked or bool(ruled.brands) and bool(_WANTED_IN.search(folded) or _HAVING.search(folded))
    if ruled and not (goods_asked or any(not excluded(pid, ruled, vocabulary) for _, _, pid in spans)):
        ruled = RuledOut()   # 帐篷699太贵啦 (bargaining), 这双不要了 能退吗: nothing else asked, so nothing ruled out
    # 想买个足球 但是不要耐克的: the Nike ball is ruled out by its brand, so 足球 is the kind of goods asked about
    by_brand = tuple(dict.fromkeys(pid for _, _, pid in spans if pid not in ruled.products
                                   and vocabulary.brand_of.get(pid) in ruled.brands))
    products = tuple(dict.fromkeys(pid for _, _, pid in spans if not excluded(pid, ruled, vocabulary)))
    sports = _sports_played(folded, spans, vocabulary)
    played = [(s, e) for s, e, _ in spans if _played(folded, s) is not None]   # 打网球两年了, 想学滑板: the game
    put_on = [(s, e) for s, e, _ in spans if folded[e:e + 1] == "上" and _USE_OF.match(folded, e)]   # 网球拍上装的
    spans, products = _playing(folded, spans, products, vocabulary)
    spans, products = _beside_activity(folded, spans, products)
    # a price stated to be confirmed (壶铃99对吧) is no count and no budget: blanked, the positions kept
    figures = _STATED_PRICE.sub(lambda m: " " * len(m.group()), folded) if spans else folded
    per, overall, paired, overall_paired = quantities(figures, spans)
    high, low = budget(figures)
    total_budget = None
    counted = overall if overall is not None else max(per.values(), default=None)
    if high is not None and (counted is not None and counted > 1 and len(products) == 1 and _WHOLE_BUDGET.search(folded)
                             or len(products) > 1 and _ALL_OF_IT.search(folded)):
        # 10个足球 预算1200够不够 / 预算两千，一顶帐篷加两根登山杖，够不 (水壶水杯预算50以内: each, a filter):
        total_budget, high, low = high, None, None   # what they cost, against it
    brands = [b for b in vocabulary.brands_in(folded) if b not in ruled.brands | ruled.naming]
    corrected = _CORRECTION.search(folded, 1)
    if corrected and (later := [b for b in vocabulary.brands_in(folded[corrected.end():]) if b in brands]):
        brands = later   # 斯伯丁篮球多少钱？哦不是，我说的是威尔胜那个室外耐磨的: the brand said after the correction
    brand = next(iter(brands), None)
    labels = frozenset(labels or ())
    if "policy:sizing" in labels and not _SIZE_WORDS.search(folded):
        labels = labels - {"policy:sizing"}   # 带跳操课 穿什么鞋合适: which shoes, no size asked
    by_rules = {ask for ask, pattern in _ASKS if pattern.search(folded)}
    if ruled and rest_asked:
        by_rules.add(Ask.LIST)   # 护具里除了护膝还有啥, 护具我想看看 耐克的别推荐: the rest, listed
    asks = _asks(by_rules, labels, bool(products), folded, focus=has_focus)
    if total_budget is not None:
        asks = (asks - {Ask.BARGAIN}) | {Ask.PRICE}   # 预算1200够不够: the total, to set against the budget
    if (high is not None or low is not None) and _BUDGET_TOLD.search(folded):
        asks.discard(Ask.BARGAIN)   # 预算就180，有合适的吗: what the budget allows, no offer made
    if Ask.BARGAIN in asks and _WHICH_CHEAPER.search(folded):
        asks = (asks - {Ask.BARGAIN}) | {Ask.COMPARE}   # 哪个便宜点: which of them costs less, no offer made
    if products and _STATED_PRICE.search(folded):   # 壶铃99对吧 我记得是: no complaint, the price confirmed
        confirming = {Ask.BARGAIN} if _CONFIRMING.search(folded) else set()   # 篮球是200块吧: no offer made
        asks = (asks - {Ask.COMPLAINT, Ask.OFF_TOPIC, Ask.THANKS} - confirming) | {Ask.PRICE}
    if ruled and rest_asked and not _POLICY_ASKED_PLAINLY.search(folded):
        # 斯伯丁的不要，换个牌子的有没有: the rest of the goods, not a return (这双不要了 能退吗 asks one)
        asks = (asks - {Ask.POLICY, Ask.COMPLAINT, Ask.GREETING, Ask.THANKS, Ask.OFF_TOPIC}) | {Ask.LIST}
        labels = frozenset(label for label in labels if not label.startswith("policy:"))
    if Ask.SPEC in asks and products and _HAVING_ONLY.fullmatch(_without(folded, spans)):
        asks = (asks - {Ask.SPEC}) | {Ask.STOCK}   # 压缩紧身裤有吗: whether the shop has it, no attribute asked
    sort = next((name for name, pattern in _SORTS if pattern.search(folded)), "relevance")
    by_price = sort != "relevance"   # 护具里最便宜的, 最便宜的包, 哪款货最多: the first of a category or kind
    category = _category(folded, vocabulary, spans, bool({Ask.LIST} & (asks | by_rules)) or high is not None
                         or low is not None or by_price)
    if not labels and _GREETING.match(folded):
        asks.add(Ask.THANKS if _THANKS.search(folded) else Ask.GREETING)
    parts: tuple[str, ...] = ()
    if len(products) < 2 and (Ask.COMPARE in asks or re.search("各(?![种类样式])|分别", folded)) \
            and not (by_price and _SUPERLATIVE.search(folded)) \
            and not for_each_person(folded):   # 所有鞋子里最便宜的是哪双: one order; 我和我弟各要一双: people, no parts
        pieces = [p for p in _SEPARATORS.split(folded) if p.strip()]
        # 我儿子9岁，校队训练用的，哪个合适: clauses of one request, not things to compare — parts name goods each
        parts = tuple(pieces) if sum(_names_goods(p, vocabulary) for p in pieces) >= 2 else ()
    phrases = goods_phrases(folded, [(s, e) for s, e, _ in spans] + sports + put_on) \
        if not products and not ruled.products else []   # 帐篷我就不要了，其他的: the rest of where it is
    phrases = [p for p in phrases if not any(p.endswith(folded[s:e]) and (p == folded[s:e] or _PLAY.search(p[:s - e]))
                                             for s, e in sports + played)]   # 打网球: the sport played, no goods
    story = tuple(g for g in phrases if _story_word(g))   # 教练, 膝盖, 健身房: the story's nouns, no goods
    goods = tuple(g for g in phrases if not _only_known_words(g, vocabulary) and not _first_purchase_only(g, folded)
                  and not _asked_of_goods(g) and g not in story and not _says_no_thing(g))
    carriers = tuple(g for g in goods if _ON_GOODS.match(folded, folded.find(g) + len(g)))
    if carriers and len(carriers) < len(goods):
        goods = tuple(g for g in goods if g not in carriers)   # 球拍上缠的那种手胶: the grip asked for, not the racket
    held = tuple(g for g in goods if _HELD_AFTER.match(folded, folded.find(g) + len(g)))
    if held and _HAVING.search(folded, max(folded.find(g) for g in held)):
        goods = tuple(g for g in goods if g not in held)   # 湿泳衣跟干衣服塞一个包里…有没有能分开装的包: what is held
    if not products and not ruled.products and not any(is_han(ch) for g in goods for ch in g) \
            and (high is not None or low is not None or by_price or Ask.LIST in asks | by_rules):
        goods = _kind_word(folded, vocabulary) or goods   # 两百以内的包, rackets under 300: the kind listed
    goods = tuple(_described_kind(folded, g, vocabulary) for g in goods)   # 能装衣服的包: 包, described
    goods = tuple(_POINTER_LEAD.sub("", g) or g for g in goods)   # 吸汗的那个带子: 带子, no 那个 in the goods
    goods = tuple(g for g in goods if noun_stem(g) not in ruled.kinds and not is_marker(g))   # 帽子不要, pass
    if not products and not parts:   # 有冰爪和冰镐吗: each of the goods joined is asked about
        goods = tuple(piece for g in goods for piece in joined_goods(g))
        parts = _joined(folded, goods)
        goods = (*parts, *(g for g in goods if g not in parts))   # the goods listed are what is asked about,
        category = None if parts else category                      # not a category the story names (去露营)
    # (a span the reader made of a pointer and its description, 那个室外耐磨的, is written as no name: not extended)
    as_named = [sp for sp in spans if vocabulary.pattern is not None and vocabulary.pattern.fullmatch(folded[sp[0]:sp[1]])]
    near = extended_names(folded, as_named, set(vocabulary.names), own) if products else ""
    # 单位搞了个羽毛球队, 学校开了足球课: a team, a class, no goods asked for
    near = "" if near and (_story_word(near) or _ACTIVITY.search(near)) else near
    if near and (longer := vocabulary.containing(near)):   # 羽毛球网: a short form of 羽毛球网架, not a miss
        inside = {pid for s, e, pid in spans if folded[s:e] in near}   # …and the other products named stay named
        products = tuple(dict.fromkeys(longer if pid in inside else pid for pid in products))   # (哑铃套装和壶铃)
        near = ""
    elif near and len(products) >= 2:   # 有乒乓球台吗？乒乓球拍多少钱: 乒乓球 is only inside the table
        inside = [(m.start(), m.end()) for m in re.finditer(re.escape(near), folded)]
        apart = tuple(dict.fromkeys(pid for s, e, pid in spans if not any(a <= s and e <= b for a, b in inside)))
        products = apart or products
    if products and not near:   # 有冰球吗？没有的话足球多少钱: a thing asked for apart from the product named
        near = _asked_apart(folded, spans, vocabulary)
    if _POINTED_THING.fullmatch(near):
        near = ""   # 最便宜的那个球: a pointer at the goods named, not another thing
    pointer = reference(folded) if not products else None
    if pointer is not None and pointer.kind == "this" and goods \
            and all(noun_stem(g)[-1:] not in vocabulary.name_endings for g in goods) \
            and re.search(f"[这那][种款个](?:{'|'.join(map(re.escape, goods))})", folded):
        pointer = None   # 网球拍上装的那种避震器: a kind of thing described, of no kind the shop sells, not what was shown
    if pointer is not None and by_price and (_SUPERLATIVE.search(folded) or sort == "stock_desc") \
            and (brand or category or _WHOLE_SHOP.search(folded)):
        pointer = None   # 迪卡侬的东西里最贵的是哪个, 店里最贵的东西: the first of those, not of what was shown
    if pointer is not None and Ask.SPEC in asks and Ask.PRICE in asks \
            and (said := _SAID_OF_POINTED.search(folded)) and ASK_PATTERNS[Ask.SPEC].search(said.group("what")) \
            and not ASK_PATTERNS[Ask.SPEC].search(folded, said.end()):
        asks.discard(Ask.SPEC)   # 那就要容量大的那个，拿3个多少钱: the capacity says which one, the price is asked
    if pointer is not None and pointer.kind == "this" and brand and has_focus and not products \
            and re.search(f"{re.escape(brand.lower())}的?[那这][{MEASURE_WORDS}]", folded.lower()):
        asks.discard(Ask.LIST)   # 不是，我说的是威尔胜那个室外耐磨的: the brand's one of the kind discussed, no list
    if not products and not goods and not parts and pointer is None and not has_focus and not ruled.products:
        goods = kind_written(folded, vocabulary)   # 包多少钱: a kind of goods written as one character
    if category and goods and _story_category(folded, category, goods):
        category = None   # 游完泳湿衣服…，有啥包能分开装的: the bags asked for, not clothes
    if category:   # 打网球要用的东西: the sport played, no goods of its own
        words = (category, *CATEGORY_WORDS.get(category, ()))
        goods = tuple(g for g in goods if not any(g.endswith(w) and _PLAY.fullmatch(g[:-len(w)]) for w in words))
    if category and any(category_word in g and not _only_known_words(g, vocabulary) and not unspecific(g)
                        for g in (*goods, *story) for category_word in (category, *CATEGORY_WORDS.get(category, ()))):
        category = None   # 跑步机, 瑜伽球: a thing of its own, not the category 跑步 or 瑜伽 (nor is 健身房)
    if labels and not asks - {Ask.OFF_TOPIC, Ask.GREETING, Ask.THANKS} and (
            products or brand or category or _WANTED_IN.search(folded)
            or any(_HAVING_ONLY.fullmatch(folded.replace(g, "", 1)) for g in goods)):
        # the catalog's own words outweigh a reading as chit-chat: 速比涛有什么 is about goods; so does a clause
        # saying what the customer wants to buy (…想买个能自动记数的，哪款合适), or goods asked for alone (游泳圈有吗)
        asks = by_rules | (asks & {Ask.GREETING}) or {Ask.PRICE}
    if labels and asks and asks <= {Ask.GREETING, Ask.THANKS} and _BROWSE_ASKED.search(folded):
        asks = {Ask.GREETING, Ask.LIST}   # 客服在吗？推荐推荐, 晚上好，我就随便瞅瞅: a greeting, and goods asked for
    if "policy:first-purchase" in labels and products and not asks & PRODUCT_ASKS:
        asks.add(Ask.PROMOTION)   # 瑜伽砖有首单优惠吗: the product's own first-purchase offer
    if Ask.COMPARE in asks and "compare" not in labels and labels and len(products) < 2 and not parts:
        asks.discard(Ask.COMPARE)   # 600到780之间的跑鞋有哪个: 哪个 picks from a list, nothing to compare
    if Ask.COMPARE in asks and by_price and len(products) < 2 and not parts \
            and (goods or category or products or brand):
        asks.discard(Ask.COMPARE)   # 护具里最便宜的是哪个: the cheapest of a kind, not two things compared
    if Ask.COMPARE in asks and (high is not None or low is not None) and not parts and (goods or category or products):
        # 300到500的球拍选哪个: those within the budget, listed; 80以内 护膝护踝哪个行: those of the two within it
        asks = (asks - {Ask.COMPARE}) | ({Ask.LIST} if len(products) < 2 else set())
    if Ask.COMPARE in asks and "compare" not in labels and labels and len(products) >= 2 \
            and not _compares_named(folded, spans):
        asks.discard(Ask.COMPARE)   # 乒乓球有啥活动吗 还有乒乓拍是横拍还是直拍: 还是 between two values of one product
    if Ask.COMPARE in asks and len(products) >= 2 and not ASK_PATTERNS[Ask.COMPARE].search(folded):
        asks = (asks - {Ask.COMPARE}) | {Ask.BASKET}   # 足球和篮球各一个一共多少: a basket, not a comparison
    # 我第一次买，有首单优惠吗 with a product in focus: that product's first-purchase offer (and the policy)
    if Ask.SPENDING in asks and FIRST_PURCHASE.search(folded) \
            and ("policy:first-purchase" in labels or Ask.PROMOTION in asks):
        asks.discard(Ask.SPENDING)   # 我是第一次在你们家买，首单多少 / …有优惠不: a first purchase has no spending to sum
    if refund_asked(folded) and ("policy:returns" in labels or Ask.POLICY in asks or Ask.ORDER in asks):
        asks |= {Ask.ORDER, Ask.POLICY}   # 退的话退我多少钱: what their order cost each unit, and the policy
    if Ask.SPENDING in asks:
        # what the operators' figures did not take (上次买足球那一单花了多少: one order, not a sum over a period)
        # is read from the customer's own orders
        asks.add(Ask.ORDER)
    first_offer = has_focus and labels and {lb for lb in labels if lb.startswith("policy:")} == {"policy:first-purchase"}
    # a policy beside an attribute asked of the focus (what sizes? after the helmet) keeps the focus too
    about_focus = first_offer or (Ask.SPEC in asks and "policy:sizing" in labels)
    # (a game played, 打篮球老是崴脚 有没有护脚踝的, is something new the message tells: no follow-up)
    follow_up = (has_focus and not products and not goods and not played and not brand and not category and high is None
                 and low is None and not (asks - ({Ask.POLICY} if about_focus else set())) & _NOT_ABOUT_FOCUS)
    if follow_up and first_offer and not asks & PRODUCT_ASKS:
        asks.add(Ask.PROMOTION)
    if len(products) == 1 and products[0] in per:   # (a count beside goods ruled out, 不是网球 一筒多少, counts overall)
        overall = per[products[0]]
    # 练了两个月…想问问你们店里有蛋白粉卖吗: the goods the question asks for, not the first noun of the story
    wanted = _wanted(folded) if not products else ""
    if wanted.endswith("用的") and any(g in wanted for g in goods) and not all(g in wanted for g in goods):
        goods = tuple(g for g in goods if g not in wanted)   # 滑雪用的手套: 滑雪 is the use, 手套 the goods
    asked_for = _asked_apart(folded, spans, vocabulary) if not products and len(goods) > 1 else ""
    subject = near or asked_for or (goods[0] if goods else "")
    if "的" in subject and subject.rsplit("的", 1)[1]:   # 缓冲好一点的鞋: shoes described, not a thing called so
        subject = subject.rsplit("的", 1)[1]
    qualifier = "".join(ch for ch in subject[:-1] if is_han(ch) and ch not in vocabulary.name_characters)
    if not products and not qualifier and not any(map(is_han, folded)):
        english, sense = _english_near_miss(folded, vocabulary)   # boxing gloves: not the fitness gloves
        subject, qualifier = (english, sense) if english else (subject, qualifier)
    if ruled:
        products = tuple(p for p in products if not excluded(p, ruled, vocabulary))
        # the rest of that product's kind — its category's goods ending as its name — when it is ruled out by its
        # brand (足球 不要耐克的) or named again for another (家里有个耐克的足球了，想再整个别的足球)
        again = [pid for pid in ruled.products if rest_asked and folded.count(_name_of(pid, spans, folded)) >= 2]
        if (by_brand or again and not category) and not products:
            kind, category = vocabulary.kind_of((*by_brand, *again)[0])
            goods, wanted = ((kind,) if kind else goods), ""
        filed = {vocabulary.category_by_product.get(p) for p in ruled.products} - {None}
        if rest_asked and not (products or category or goods or by_brand or has_focus) and len(filed) == 1:
            category = filed.pop()   # 哑铃壶铃我都有了…有啥推荐: the rest of their category (not of goods just shown)
        pointer = None   # 除了阿迪达斯那双: the pointer is at what is ruled out
        if by_brand and not products or noun_stem(subject) in ruled.kinds:
            subject = goods[0] if goods and not products else ""
    as_kind = products[0] if len(products) == 1 and not parts and high is None and low is None and not category \
        and any(vocabulary.ending_with(folded[s:e]) and (_KINDS_ASKED.search(folded) or _KINDS_BEFORE.search(folded, 0, s)
                                                     and (e == len(folded) or _only_asking(folded[e:])))
                for s, e, pid in spans if pid == products[0]) else None
    examples = _category_by_examples(folded, spans, vocabulary)
    if examples is not None and category in (None, examples[0]):   # 衣服裤子袜子这类的: the category, not the socks
        category, dropped = examples
        products = tuple(p for p in products if p not in dropped)
        goods = () if not products else goods
    else:
        dropped = frozenset()
    if as_kind is not None:   # 篮球你们有哪几种, 跑步鞋有哪些: the kind the name names (室外耐磨篮球 too), listed
        kind, category = vocabulary.kind_of(as_kind)
        products, goods, subject, pointer = (), (kind,), kind, None
        asks.add(Ask.LIST)
    activity = (category, *CATEGORY_WORDS.get(category, ())) if category else ()
    if any(word in wanted for word in activity):
        if _says_more(wanted, activity):
            category = None   # 跑步喝水用的: goods for drinking on a run, of any category
        else:
            wanted = ""       # 有什么徒步用的东西: the category's goods
    return _of_the_brand(Intent(folded, products, parts, per, overall, high, low, brand, category,
                  first_purchase_told(folded), frozenset(asks), follow_up,
                  bool(_IN_STOCK.search(folded)), sort, subject, goods, near, pointer, labels,
                  tuple(dict.fromkeys(folded[s:e] for s, e, pid in spans
                                      if not excluded(pid, ruled, vocabulary) and pid != as_kind
                                      and pid not in dropped)),
                  refers_back(text) and not (pointer is None and reference(folded) is not None and not products),
                  (high is not None or low is not None) and any(vocabulary.ending_with(folded[s:e]) for s, e, _ in spans),
                  qualifier, paired, overall_paired, asked_for, wanted, bool(_PREMISES.search(folded)),
                  _related(subject, qualifier, wanted, goods, vocabulary) if not products else ("", ""),
                  superlative=sort == "stock_desc" or sort in PRICE_SORTS and bool(_SUPERLATIVE.search(folded)),
                  kind=_kind_named(subject, vocabulary) if not products else "", ruled_out=ruled,
                  total_budget=total_budget, added=bool(_ADDED.search(folded)),
                  unwanted=tuple(dict.fromkeys(folded[s:e] for s, e, pid in spans if excluded(pid, ruled, vocabulary)))),
                         spans, vocabulary)


def _brand_before(text: str, spans: list[tuple[int, int, str]], vocabulary: Vocabulary,
                  written: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """斯伯丁那个篮球跟威尔胜那个室外篮球比: each name with the brand written right before it (in its clause, after the
    name before it) is that brand's one product of the kind the name names, when the product of that name is
    another brand's (篮球 of 威尔胜 → 室外耐磨篮球). `written`: the message's brands and where (Vocabulary.brands_at)."""
    out, since = [], 0
    for start, end, pid in spans:
        clause = max(since, clause_start(text, start))
        before = [b for at, b in written if clause <= at and at + len(b) <= start]   # (brands_at: where each is)
        if before and (vocabulary.brand_of.get(pid) or "").lower() != before[-1].lower():
            pid = vocabulary.brands_one_ending_with(text[start:end], before[-1]) or pid
        out.append((start, end, pid))
        since = end
    return out


# a brand, then a pointer and what describes the one meant (亚瑟士那个缓震的, 威尔胜那款耐磨的, 阿迪青少年那个), up to the
# clause's end or the next thing joined (和, 跟, 与, 还是…)
_BRAND_REST = re.compile(r"[^，,。？?！!；;\s和跟与及还比]{0,10}?(?:的|(?=多少|几|吗|呢|有|分别|各|哪|怎|[，,。？?！!；;\s和跟与及还比]|$))")


def _brand_pointed(text: str, spans: list[tuple[int, int, str]], vocabulary: Vocabulary,
                   written: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """The spans plus each brand written with a pointer and no name after it (亚瑟士那个缓震的 beside 阿迪那双跑鞋): the
    brand's product whose name holds what describes it (缓震跑步鞋) and, of several, of the kind named beside it (球 of
    斯伯丁篮球 for 威尔胜那个) — when exactly one is."""
    added = []
    beside = {vocabulary.kind_of(pid)[0] for *_, pid in spans}   # the kinds named (球 of 斯伯丁篮球)
    for at, brand in written:
        end = at + len(brand)
        rest = _BRAND_REST.match(text, end)
        piece = text[end:rest.end()] if rest else ""
        if not re.search(f"[那这][{MEASURE_WORDS}]", piece) or any(at <= s < end + len(piece) for s, _, _ in spans) \
                or _CORRECTION.search(text, 1, at):
            continue   # (耐克的足球多少钱？哦不对，我是说彪马那个: a correction, read as one)
        of_brand = [pid for pid in vocabulary.products_of_brand.get(brand, ()) if not any(pid == p for *_, p in spans)]
        kinds = {ch for ch in piece if ch in vocabulary.name_endings}   # 那双跑鞋: shoes
        of_kind = [pid for pid in of_brand if any(vocabulary.of_kind(pid, k) for k in kinds)] if kinds else of_brand
        said = [w for w in re.split(f"[那这][{MEASURE_WORDS}]|的", piece) if len(w) >= 2]
        described = [pid for pid in of_kind if all(any(set(w) <= set(name) for name in vocabulary.chinese_names.get(pid, ()))
                                                   for w in said)]   # (跑鞋: 跑步鞋)
        if len(described) > 1 and beside:   # of several, the kind named beside (威尔胜那个 beside 篮球)
            described = [pid for pid in described if any(vocabulary.of_kind(pid, k) for k in beside)]
        if len(described) == 1:
            added.append((at, end + len(piece), described[0]))
    for m in _POINTER_DESCRIBED.finditer(text) if spans and not _CORRECTION.search(text, 1) else ():
        # 斯伯丁篮球跟那个室外耐磨的: beside goods named, the one of their kind whose name holds what describes it
        if any(s < m.end() and m.start() < e for s, e, _ in [*spans, *((a, b, "") for a, b, _ in added)]):
            continue
        found = [pid for pid, names in vocabulary.chinese_names.items() if not any(pid == p for *_, p in spans)
                 and any(vocabulary.of_kind(pid, k) for k in beside) and any(set(m.group("desc")) <= set(n) for n in names)]
        if len(found) == 1:
            added.append((m.start(), m.end(), found[0]))
    return sorted([*spans, *added])


_POINTER_DESCRIBED = re.compile(f"[那这][{MEASURE_WORDS}](?P<desc>[\u4e00-\u9fff]{{2,6}}?)的")


def _of_the_brand(asked: Intent, spans: list[tuple[int, int, str]], vocabulary: Vocabulary) -> Intent:
    """阿迪达斯的足球, 彪马的足球: the brand's one product of the kind named (青少年训练足球, 室内五人制足球) when the product of
    that name is another brand's (耐克's 足球); as read when the brand has none or several of that kind."""
    if not asked.brand or len(asked.products) != 1:
        return asked
    own = asked.products[0]
    if (vocabulary.brand_of.get(own) or "").lower() == asked.brand.lower():
        return asked
    found = {vocabulary.brands_one_ending_with(word, asked.brand) for word in {asked.text[s:e] for s, e, pid in spans
                                                                               if pid == own}} - {None}
    return replace_product(asked, own, found.pop()) if len(found) == 1 else asked


def _of_its_line(text: str, spans: list[tuple[int, int, str]],
                 vocabulary: Vocabulary) -> list[tuple[int, int, str]]:
    """乒乓球刚入门 想买个成品拍, 网球…想换支进阶点的拍子: a name with a kind of goods written after it on its own (拍,
    拍子, 鞋) means the product named by the two together (乒乓球拍, 网球拍), when the catalog has one; so does an English
    name glued to one (football鞋 → 足球鞋)."""
    out = []
    for start, end, pid in spans:
        name, rest = text[start:end], text[end:]
        line = next((vocabulary.names[name + kind] for kind in dict.fromkeys(rest)
                     if name + kind in vocabulary.names and kind in vocabulary.name_endings
                     and re.search(f"{kind}子?(?:$|[^\u4e00-\u9fff]|[吗呢啊呀吧嘛么的有])", rest)),
                    None) if len(spans) == 1 else None
        if line is None and name.isascii() and rest[:1] in vocabulary.name_endings:
            # football鞋: an English name glued to a kind of goods, the product its Chinese name and that kind name (足球鞋)
            line = next((vocabulary.names[cn + rest[0]] for cn in vocabulary.chinese_names.get(pid, ())
                         if cn + rest[0] in vocabulary.names), None)
            end += line is not None   # the kind is part of the name written
        out.append((start, end, line or pid))
    return out


# Goods given as examples of what is meant (衣服裤子袜子这类的, 护膝护腕之类, 衣服裤子都行)
_SUCH_AS = re.compile(r"([\u4e00-\u9fff、和跟或]{2,16}?)(?:这类|这一类|那类|之类|这些|什么的|都行|都可以)")


def _category_by_examples(text: str, spans: list[tuple[int, int, str]],
                          vocabulary: Vocabulary) -> tuple[str, frozenset[str]] | None:
    """(the category, the products named as its examples) when goods are listed as examples of one category that
    one of them names (衣服 → 服饰; 袜子, the socks, is one of its goods) or that two products named are of (护膝护腕
    这类的: 护具), else None."""
    m = _SUCH_AS.search(text)
    if m is None or vocabulary.category_pattern is None:
        return None
    categories = {vocabulary.category_of[w] for w in vocabulary.category_pattern.findall(m.group(1))}
    named = [pid for s, e, pid in spans if m.start(1) <= s and e <= m.end(1)]
    if not categories and len(set(named)) >= 2:   # 护膝护腕这类的: two products of one category
        categories = {vocabulary.category_by_product.get(pid) for pid in named}
    if len(categories) != 1 or None in categories:
        return None
    category = categories.pop()
    inside = frozenset(pid for s, e, pid in spans if m.start(1) <= s and e <= m.end(1)
                       and vocabulary.category_by_product.get(pid) == category)
    return category, inside


def _name_of(pid: str, spans: list[tuple[int, int, str]], text: str) -> str:
    """The words a product was named by in `text` ('\0' when it was not)."""
    return next((text[s:e] for s, e, p in spans if p == pid), "\0")


def excluded(pid: str, ruled: RuledOut, vocabulary: Vocabulary) -> bool:
    """Whether the product is one the customer ruled out (by itself, its brand or its kind)."""
    return ruled.excludes(pid, vocabulary.brand_of.get(pid))


def _kind_named(subject: str, vocabulary: Vocabulary) -> str:
    """The subject as a kind of goods (its stem): one character (包, 鞋子 → 鞋), or two or more that several products'
    names end with and no product's name is (球拍, 球鞋); '' otherwise."""
    stem = noun_stem(subject) if subject else ""
    if len(stem) == 1:
        return stem
    if len(stem) < 2 or not all(map(is_han, stem)) or stem in vocabulary.names:
        return ""
    return stem if len(vocabulary.ending_with(stem)) >= 2 else ""


def _story_category(text: str, category: str, goods: tuple[str, ...]) -> bool:
    """Whether the category's words are only in clauses that ask nothing, while the goods asked for are in another
    (游完泳湿衣服和干衣服老混一起，有啥包能分开装的: the story's clothes, not the category to list); a use (户外用的)
    is no story."""
    words = [w for w in (category, *CATEGORY_WORDS.get(category, ())) if w]
    clauses = [c.group() for c in _CLAUSE.finditer(text)]
    told = [c for c in clauses if any(w in c for w in words)]
    return bool(told) and not any(g in c for c in told for g in goods) \
        and any(g in c for c in clauses for g in goods) \
        and not any(pattern.search(c) for c in told for _, pattern in _ASKS) \
        and not any(re.search(f"{re.escape(w)}(?:时|时候)?[用穿戴玩]", c) for c in told for w in words)


def _compares_named(text: str, spans: list[tuple[int, int, str]]) -> bool:
    """Whether some clause holds a comparing word and names two products (足球和篮球哪个好), not two values of
    one product beside another's question (乒乓球有啥活动吗 还有乒乓拍是横拍还是直拍)."""
    return any(ASK_PATTERNS[Ask.COMPARE].search(clause.group())
               and len({pid for s, _, pid in spans if clause.start() <= s < clause.end()}) >= 2
               for clause in _CLAUSE.finditer(text))


def _related(subject: str, qualifier: str, wanted: str, goods: tuple[str, ...],
             vocabulary: Vocabulary) -> tuple[str, str]:
    """(the thing asked for, the kind of it the shop sells) when the thing is qualified by what no product is:
    characters no product name uses (滑雪板 → 滑板, 拳击手套 → 手套) or a use (击剑用的手套 → 手套); the kind
    must be a product's name or end some (无人机 → 人机 is none)."""
    def sold(word: str) -> bool:
        return len(word) >= 2 and (word in vocabulary.names or bool(vocabulary.ending_with(word)))

    if qualifier:
        rest = "".join(c for c in subject if c not in qualifier)
        return (subject, rest) if rest != subject and sold(rest) else ("", "")
    if wanted.endswith("用的") and len(wanted) > 2 and goods == (subject,) and sold(subject):
        return wanted + subject, subject
    return "", ""


_HAVING = re.compile(r"有没有|有不有|卖不卖|在卖|有[吗么嘛]|有.{1,10}[吗么嘛不没]|卖.{1,10}[吗么嘛不]")
_NO_THING_TAGS = frozenset("vdarmqupcy")   # jieba's tags of a word ending no goods: a verb, an adverb, a particle…
_PRICED = re.compile(f"[\u4e00-\u9fff]{{2,8}}(?:{PRICE_WORDS})")   # 卧推凳多少钱: goods, then their price asked
# the shop's premises: a kind of shop building, where the shop is, going there
_PREMISES = re.compile(r"(?:实体|线下|门|分|旗舰|专卖|体验|直营)店|店(?:在|开在)哪|店.{0,2}地址|去(?:你们)?店里")
# a buying clause and its object (想买个能分开装的包, 打算入一双轻点的跑鞋): the goods wanted, described or named
_WANTED = re.compile(rf"(?:想|要|打算|准备|需要)(?:给|帮|替)?(?:他|她|你|他们|她们|孩子|我)?(?:买|找|入手|入|换|送|添置|添)"
                     rf"(?:给)?(?:他|她|你|他们|她们)?(?:[一两\d]?[{MEASURE_WORDS}])?"
                     r"(?P<object>[\u4e00-\u9fff\d、]{1,16})$")


# a buying clause anywhere in a message, not a refusal (不想买了)
_WANTED_IN = re.compile("(?<![不别没])" + _WANTED.pattern.removesuffix("$"))

# goods told by their use (跑步喝水用的, 游泳时装湿衣服用的): the use is the thing wanted
_USED_FOR = re.compile(r"(?P<object>[\u4e00-\u9fff]{2,12}用的)")
# a thing described by the goods it is put on (网球拍上装的那种避震器): asked for, not a need told
_ON_GOODS = re.compile(r"上(?:装|配|绑|缠|贴)的")
# said around the thing asked, in speech: a filler before it (那个, 就是, 嗯), the kind described after it (就是家里用的那种)
_FILLER_BEFORE = re.compile(r"^(?:那个|这个|就是|嗯|呃|那)")
_KIND_AFTER = re.compile(r"(?:就是)?[\u4e00-\u9fff]{1,8}?的(?:那种|这种|那款|这款)$")
# asking words inside a use clause (跑步机你们有没有就是家里用的): the use is what follows them (家里用的)
_ASKING_INSIDE = re.compile(r"有没有|有卖|你们|你家|就是|那种|这种")


# what a use clause says besides its activity and its thing: asking words, particles, 时/时候
_NOT_THE_USE = re.compile(r"有什么|有没有|有啥|什么|用的$|时候|时|的")


def _says_more(wanted: str, activity: tuple[str, ...]) -> bool:
    """Whether goods wanted for a use say more than the activity a category names (跑步喝水用的, not 徒步用的)."""
    rest = re.sub("|".join(map(re.escape, activity)), "", wanted)
    return len(_NOT_THE_USE.sub("", rest)) >= 2


def wanted_phrase(text: str) -> str:
    """The object of the last buying clause as written, however generic (想送他个能测心率、看配速的东西): what the goods
    are described to do; '' when no clause says what the customer wants to buy."""
    found = [m.group("object") for clause in _CLAUSE.finditer(text) if (m := _WANTED.search(clause.group()))]
    return found[-1] if found else ""


def _wanted(text: str) -> str:
    """The object of the last clause that says what the customer wants to buy, or what for (…用的), '' when
    none does: after a story (最近开始游泳加健身…想买个能分开装的包) it, not the story's nouns, is the goods to
    search for, and an activity inside it (跑步喝水用的) is what the goods are for, not a category to list."""
    found = [m.group("object") if m.re is _WANTED else without_asking_lead(_ASKING_INSIDE.split(m.group("object"))[-1])
             for clause in _CLAUSE.finditer(text)
             if (m := _WANTED.search(clause.group()) or _USED_FOR.search(clause.group()))]
    # …打算买个能撑一下的东西: a thing described by its use alone, which the story says better
    return found[-1] if found and not unspecific(found[-1]) else ""


def _asked_apart(text: str, spans: list[tuple[int, int, str]], vocabulary: Vocabulary) -> str:
    """Goods asked for (有X吗, 卖X吗, 有没有X卖, X多少钱) in a clause that names no product: a thing the catalog's
    words do not cover — beside a product named elsewhere (卧推凳多少钱，配哑铃用的), said "not sold" before it;
    after a story, what is asked."""
    for clause in _CLAUSE.finditer(text):
        words = clause.group()
        having = _HAVING.search(words)
        if any(clause.start() <= s < clause.end() for s, _, _ in spans) or not (having or _PRICED.search(words)):
            continue   # names a product, or asks no having nor a price (我们小区有块空地)
        phrases = goods_phrases(words, [])
        for s, e in framed_objects(words, []):
            thing = words[s:e]
            if thing not in phrases or "的" in thing or words[e:].startswith("的"):
                continue   # (有能计数的吗, 有减震好点的鞋吗: a property, or goods described, not a thing named)
            thing = thing.removesuffix("卖") if len(thing) > 2 else thing   # 有没有野餐垫卖: 野餐垫
            if not having and jieba.posseg.lcut(thing)[-1].flag[:1] in _NO_THING_TAGS:
                continue   # 实际要付多少钱: a price asked of what is paid, not of a thing
            if not _only_known_words(thing, vocabulary) and not _first_purchase_only(thing, words) \
                    and not _asked_of_goods(thing) and not _story_word(thing) \
                    and not _says_no_thing(thing):   # 有没有优惠活动: asked of the product; 有这么多货码: asking
                return thing
    return ""


def replace_product(asked: Intent, old: str, new: str) -> Intent:
    """The message read as naming `new` where it named `old`."""
    products = tuple(dict.fromkeys(new if p == old else p for p in asked.products))
    quantities = {new if p == old else p: n for p, n in asked.quantities.items()}
    return dataclasses.replace(asked, products=products, quantities=quantities)


# Verbs that make a ball's name the game (打篮球, 踢足球): in a sentence about a need, the sport is meant.
PLAY_VERBS = "打踢玩练学"   # the verbs that make a sport's name the sport played (打篮球, 踢校园足球)
_PLAY = re.compile(f"[{PLAY_VERBS}][^，,。？?！!的]{{0,2}}$")


def _played(text: str, at: int) -> int | None:
    """Where the verb that makes the word at `at` a sport being played starts (打篮球, 踢校园足球), or None."""
    verb = _PLAY.search(text[max(0, at - 4):at])
    return max(0, at - 4) + verb.start() if verb else None


# what a sport is done in, as or where, written after its name: no goods (足球课, 游泳班, 羽毛球队, 篮球赛, 羽毛球角)
_ACTIVITY = re.compile(r"(?:课|班|队|社团?|俱乐部|比赛|赛|训练营|培训|场地?|馆|角)$")


_ACTIVITY_AFTER = re.compile(r"(?:课|班|队|社|俱乐部|比赛|赛|训练营|培训|场|馆|角)(?![服衣鞋包袜])")


_TEAM_AFTER = re.compile(r"(?:队|社|俱乐部|协会)(?![服衣鞋包袜])")   # a team the customer is in: where, not what
_GOODS_COUNTED = re.compile(f"{NUM}\\s*{MEASURE}(?![人位名])")   # 每人一支 (goods), not 12个人 (people)
_POINTER_LEAD = re.compile(f"^(?:[那这哪](?:一)?[{MEASURE_WORDS}]|那种|这种)")


def _beside_activity(text: str, spans: list[tuple[int, int, str]],
                     products: tuple[str, ...]) -> tuple[list[tuple[int, int, str]], tuple[str, ...]]:
    """A sport's team, class or place (我们足球队11个人 每人一副护腿板, 篮球社经费就300 买两个斯伯丁篮球) beside other goods
    named: the sport is where the goods are for, not goods asked for. Alone (学校开了足球课) it stays."""
    kept = [sp for sp in spans if not _ACTIVITY_AFTER.match(text, sp[1])]
    if not kept and not (any(_TEAM_AFTER.match(text, sp[1]) for sp in spans) and _length(text) >= 8
                         and not _GOODS_COUNTED.search(text)):
        return spans, products   # (alone, 学校开了足球课 stays; a team's need told, 我是足球队的守门员 扑球手老疼, does not)
    if len(kept) == len(spans):
        return spans, products
    return kept, tuple(p for p in products if any(pid == p for _, _, pid in kept))


def _sport_asked(text: str, start: int, end: int) -> bool:
    """Whether the word at start:end is a sport being played and the rest of the message tells nothing more
    (打网球的有吗, 打羽毛球需要的东西都卖啥: the sport's goods; 我打羽毛球老崴脚 有啥能护一下的: a need, searched)."""
    verb = _played(text, start)
    return verb is not None and not tells_something(text[:verb] + text[end:])


# after a catalog mention, 用的 and then goods (足球用的手套), not an asking word (足球用的吗, 篮球用的有吗)
_USE_OF = re.compile(r"(?:(?:时|时候)?(?:用|穿|戴)的|上(?:装|配|绑|缠|贴)的(?:那种|这种|那个)?)"
                     r"(?![有吗呢么嘛吧多怎是还都能可会])[\u4e00-\u9fff]")   # …and 网球拍上装的避震器: a thing put on it


def _playing(text: str, spans: list[tuple[int, int, str]], products: tuple[str, ...], vocabulary: Vocabulary):
    """Drop the catalog mentions that name a sport being played, when the message tells a need or the sport is a
    category of the shop (打网球的有吗: the tennis goods, not the balls), or the use of the goods named after them
    (足球用的手套: gloves for football, not the football)."""
    kept = [s for s in spans if not _USE_OF.match(text, s[1])]
    # (a sport's name read with the kind of goods written after it, 打网球…想换支拍子 → 网球拍, is those goods: kept)
    kept = [s for s in kept if vocabulary.names.get(text[s[0]:s[1]]) != s[2]
            or not (_played(text, s[0]) is not None and _length(text) >= 8)
            and not (text[s[0]:s[1]] in vocabulary.category_of and _sport_asked(text, s[0], s[1]))]
    if len(kept) == len(spans):
        return spans, products
    return kept, tuple(dict.fromkeys(pid for _, _, pid in kept))


def _sports_played(text: str, spans: list[tuple[int, int, str]], vocabulary: Vocabulary) -> list[tuple[int, int]]:
    """The mentions that name one of the shop's categories as a sport being played (打网球): no goods of their own."""
    return [(s, e) for s, e, _ in spans if text[s:e] in vocabulary.category_of and _sport_asked(text, s, e)]


# Asks that are never about the product in focus, however short the message.
_NOT_ABOUT_FOCUS = frozenset({Ask.POLICY, Ask.ORDER, Ask.MODIFY, Ask.SPENDING, Ask.INJECTION, Ask.OFF_TOPIC})


# A product's price asked in so many words (not 运费多少, 多少天).
# A price stated to be confirmed (799来着, 99对吧, 200块是吧, 是180吗): a figure, its unit, and a question
# (或 a guess: 不会要三百多吧, 八百块吗 — a figure in characters holds 百/千/万, or says 块/元)
_CN_DIGITS = "一二两三四五六七八九十"
_STATED_PRICE = re.compile(rf"(?<![\d.{_CN_DIGITS}百千万])(?:\d+(?:\.\d+)?多?\s*(?:元|块钱?|rmb)?|"
                           rf"[{_CN_DIGITS}]*[百千万][{_CN_DIGITS}百]*多?\s*(?:元|块钱?)?|[{_CN_DIGITS}]+多?\s*(?:元|块钱?))"
                           r"\s*(?:来着|对吧|对吗|对不对|是吧|是不是|没错|吧|吗|嘛|[?？])")
# a budget said of the whole purchase, not of each unit (预算1200够不够, 一共预算500)
_WHOLE_BUDGET = re.compile(r"预算|一共|总共|总价|合计|够不够|够吗|够买|够用")
_ALL_OF_IT = re.compile(r"够|一共|总共|总价|合计|加起来")   # …of several goods: a budget for them all
_BUDGET_TOLD = re.compile(r"预算|以内|以下|之内|不超过|左右|上下|出头|之间")
_CONFIRMING = re.compile(r"对吧|对吗|对不对|是吧|来着|没错|是不是|我记得|好像是|应该是|是\d")
# Words of a size question (码, 身高, 偏大): a size guide asked, not which goods to wear
_SIZE_WORDS = re.compile(r"码|尺寸|尺码|大小|多大|号|偏大|偏小|脚长|脚宽|脚背|身高|体重|斤|公斤|kg|cm|厘米|宽|窄|胖|瘦|肥|紧|松|合脚|挤脚|size",
                         re.I)
_PRICE_ASKED_PLAINLY = re.compile(r"多少钱|多钱|价格是|价钱|售价|怎么卖|几块钱|卖多少|(?:什么|啥)价")
# A delivery, returns, invoice or warranty question in so many words (not 客服 or 支付 alone, which greet or pay).
_POLICY_ASKED_PLAINLY = re.compile(r"发货|几天(?:能)?到|多久(?:能)?到|(?:啥|什么)时候(?:能)?到|退货|退换|换货|退款|(?:能|可以)[退换](?:吗|不|么)|"
                                   r"发票|保修|质保|多久(?:内)?(?:要|得)?付款|怎么付款|货到付款|支付方式")


# Which of several costs less (哪个便宜点, 哪款更便宜): a comparison, never a request for a lower price
_WHICH_CHEAPER = re.compile(f"哪一?[{MEASURE_WORDS}]?(?:更|比较|稍微)?(?:便宜|实惠|划算)")


# One of the customer's own orders pointed at (足球那单, 我那个订单, 这笔单): what a policy question is asked of
_AN_ORDER_POINTED = re.compile(r"[那这]一?[个笔]?(?:订单|单)(?![价独])|我的订单|订单号")


def _asks(by_rules: set[Ask], labels: frozenset[str], named: bool = False, text: str = "",
          focus: bool = False) -> set[Ask]:
    """The router's labels decide what is asked; the word rules add the details it does not label
    (a brand question is an attribute question; a change demand is bargaining about the database; with a
    product named, its price asked in so many words; named or in focus, an attribute)."""
    if not labels:
        return by_rules
    asks = {LABEL_ASKS[label] for label in labels if label in LABEL_ASKS}
    if any(label.startswith("policy:") for label in labels):
        asks.add(Ask.POLICY)
    if asks & PRODUCT_ASKS:
        asks |= by_rules & PRODUCT_ASKS
        if (named or focus) and Ask.POLICY not in asks and _POLICY_ASKED_PLAINLY.search(text):
            asks.add(Ask.POLICY)   # 泡沫轴多少钱 今天拍了啥时候发货 (嗯 还有 啥时候能到 after 瑜伽砖): the policy beside it
    elif named and _PRICE_ASKED_PLAINLY.search(text):
        asks.add(Ask.PRICE)   # 网球拍多少钱？保修多久: a long message the router read for its policy question only
    elif (named or focus) and Ask.SPEC in by_rules and Ask.POLICY in asks:
        asks.add(Ask.SPEC)    # (a helmet in focus) what sizes?: the product's own sizes, besides the size guide
    elif named and Ask.POLICY in asks and _HAVING.search(text):
        asks.add(Ask.STOCK)   # 给闺女买轮滑鞋 她穿28码 有吗: whether the shop has it (in that size), besides the guide
    if Ask.ORDER in by_rules and _PAID.search(text):
        asks = (asks - {Ask.PRICE, Ask.PROMOTION, Ask.BASKET}) | {Ask.ORDER}   # 瑜伽垫那个订单我付了多少钱: the order's
    if Ask.ORDER in asks and Ask.POLICY not in asks and _POLICY_ASKED_PLAINLY.search(text):
        asks.add(Ask.POLICY)   # 我那单买了两个足球的，要是漏气了能换不: the order, and the policy asked of it
    elif Ask.ORDER in by_rules and Ask.POLICY in asks and _AN_ORDER_POINTED.search(text):
        asks.add(Ask.ORDER)    # 足球那单当时没填发票 现在还能开吗: the policy, and the order it is asked of
    if Ask.ORDER in by_rules and _OWN_BOUGHT.search(text):
        asks = (asks - {Ask.LIST}) | {Ask.ORDER}   # 看看我都买过些啥, 我都有哪些订单: their own purchases, not goods
    if Ask.BASKET in asks and Ask.SPEC in by_rules and not re.search(f"{PRICE_WORDS}|{NUM}\\s*{MEASURE}", text):
        asks = (asks - {Ask.BASKET}) | {Ask.SPEC}   # 加厚健身垫和瑜伽垫各多厚: each one's thickness, nothing bought
    if Ask.MODIFY in by_rules and asks & {Ask.BARGAIN, Ask.INJECTION, Ask.PRICE, Ask.STOCK}:
        asks.add(Ask.MODIFY)
    if named and Ask.LIST in asks and Ask.LIST not in by_rules and "推荐" not in text \
            and (asks & {Ask.PRICE, Ask.STOCK, Ask.PROMOTION} or _HAVING.search(text)):
        asks.discard(Ask.LIST)   # 迪卡侬的瑜伽垫有木有送啥赠品, keep的泡沫轴有木有: the product named, no list of goods
    return asks


# More of what is being bought (再加一个, 再来两个, 多要一双): a count added to the one before
_ADDED = re.compile(f"(?:再|多)(?:加|来|要|买|拿)\\s*{NUM}\\s*{MEASURE}")
# The shop as a place (你们这有吗, 这边有卖吗): who is asked, nothing asked about
_THE_SHOP = re.compile(r"你们?(?:这|那)(?:里|儿|边)?|(?:这|那)(?:里|儿|边)")
# What was paid, not what a product costs (付了多少, 花了多少来着, 实付多少): asked of an order
_OWN_BOUGHT = re.compile(r"我.{0,6}买过(?:些|了)?(?:什么|啥|哪些)|我.{0,4}(?:哪些|什么|啥|几个|几笔|多少个?)(?:订单|单子)")
_PAID = re.compile(r"(?:付|花|扣|交|收)了(?:我)?多少|实付(?:了|是)?多少|付款金额")


# What is left of 新客第一单买的话 / 头一次来你家买 once its first-purchase words are out: the buying, nothing bought.
_AROUND_FIRST_PURCHASE = re.compile(r"[新老客户用的话买价单下来我你家在们这里]|\s")


def _asked_of_goods(phrase: str) -> bool:
    """A phrase that is what is asked of goods, not goods: a policy's word (退货运费 cut as 退/货运费), an
    attribute alone (what sizes?), or only words asking for a promotion or stock (有没有优惠活动, 有现货吗, 哪款货)."""
    phrase = phrase.lstrip(MEASURE_WORDS) or phrase   # 哪款货最多: jieba's 款货 is a measure word and stock
    return bool(ASK_PATTERNS[Ask.POLICY].search(phrase) or ASK_PATTERNS[Ask.SPEC].fullmatch(phrase)
                or any(re.fullmatch(f"(?:{ASK_PATTERNS[ask].pattern})+", phrase) for ask in (Ask.PROMOTION, Ask.STOCK)))


def _story_word(phrase: str) -> bool:
    """A noun of the customer's story, by the thesaurus no goods (手术, 康复师, 羽毛球队, 膝盖, 比赛): never searched
    for, never called not sold."""
    return names_no_goods(phrase, jieba.lcut(phrase)[-1]) if len(phrase) >= 2 else False


def _names_goods(piece: str, vocabulary: Vocabulary) -> bool:
    """Whether a piece of a message names goods: a catalog word, or a phrase that may name goods (not a person, a
    group, a story's noun or how the customer asks)."""
    if vocabulary.pattern is not None and vocabulary.pattern.search(piece):
        return True
    return any(not _story_word(g) and not _says_no_thing(g) for g in goods_phrases(piece, []))


# after goods: they are what something holds (湿泳衣跟干衣服塞一个包里), joined to others or not
_HELD_AFTER = re.compile(r"(?:[跟和与及][\u4e00-\u9fff]{1,6}?)?(?:都|全)?(?:塞|装|放|搁)(?:进|在|到)?")
_STATE = re.compile(r"(?<=[\u4e00-\u9fff])得(?P<rest>[\u4e00-\u9fff]+)")   # 辣得睁不开: how it feels


def _says_no_thing(phrase: str) -> bool:
    """A phrase of words that never name goods (货码: 货 and 码, typed for 货吗), a state told (辣得睁不开), or a quality
    a little more (贵点, 便宜些, 大一点: an adjective and 点/些): how the customer asks or feels, not goods."""
    if all(never_goods(c) for c in phrase) or phrase.startswith(("全都", "全部都", "都")):
        return True   # 货码; 全都潮: "all of it", then how it is
    if (state := _STATE.search(phrase)) and "的" not in state.group("rest") and (state.group("rest")[:1] in "不没很太好直" or state.group("rest")[1:2] == "不"
                                             or dictionary_tag(jieba.lcut(state.group("rest"))[0])[:1] in ("v", "a", "d")):
        return True   # 辣得睁不开, 累得不行: a state told (a feeling, 得 and how much), not goods
    quality = re.sub(r"一?[点些]$", "", phrase)
    return quality != phrase and bool(quality) and dictionary_tag(quality).startswith("a")


def _first_purchase_only(phrase: str, text: str) -> bool:
    """A phrase that is a first purchase told (新客第一单买的话), or cut out of one (首/单能 of 首单能便宜多少), not
    goods: never a thing to search for."""
    at = text.find(phrase)
    if at >= 0 and any(m.start() < at + len(phrase) and at < m.end() for m in FIRST_PURCHASE.finditer(text)):
        return True
    return bool(FIRST_PURCHASE.search(phrase)) and not _AROUND_FIRST_PURCHASE.sub("", FIRST_PURCHASE.sub("", phrase))


def _only_known_words(phrase: str, vocabulary: Vocabulary) -> bool:
    """A phrase of nothing but the catalog's brands and category words (耐克, 户外装备, 运动服饰) names no
    new goods; 瑜伽球 (a category word and a thing) does."""
    def covered(rest: str) -> bool:   # the phrase split into known words, trying the longest first
        if not rest or _CATEGORY_TAIL.fullmatch(rest) or rest in GENERIC:
            return True
        return any(rest.startswith(w) and covered(rest[len(w):]) for w in vocabulary.known_words)
    return covered(phrase)


_ELLIPTICAL = re.compile(r"^(?:那|那么|那要是|要是|如果|换成|改成|还有)?[^，,。？?！!]{0,8}(?:呢|嘞|咧)[？?]*$"
                         r"|^(?:那|那么|要是|如果)[^，,。？?！!]{0,8}$"
                         r"|^(?:what|how) about\b|^(?:and|make it)\b")
# a question's marks and words, whatever it asks (吗, 呢, 有没有, ？)
_ASKS_ANYTHING = re.compile(r"[？?吗呢么嘛]|有没有|卖不卖|有不有|多少钱|几[钱块元号码]|怎么|什么|啥|哪")
def leans_first(text: str) -> bool:
    """The message's first clause is elliptical (三筒呢，这回包邮了吧; 那护腕呢 也是一对吗): it leans on the conversation,
    whatever the rest asks of its own."""
    folded = reading(text)
    first = _CLAUSE.match(folded)
    return first is not None and first.end() < len(folded.rstrip("？?！!。 ")) \
        and first.group().endswith(("呢", "嘞")) and bool(_ELLIPTICAL.match(first.group()))


# Whether a product has something, asked yes or no (有反光没, 有没有防滑, 有拍套吗): the thing asked of
_HAS_IT = re.compile(r"有没有\s*(?P<b>[\u4e00-\u9fff]{2,4}?)\s*(?=[？?，,。!！\s]|$)"
                     r"|有(?!没)\s*(?P<a>[\u4e00-\u9fff]{2,4}?)\s*(?:没有?|吗|么|嘛|不)(?=[？?，,。!！\s]|$)")


def had_asked(text: str) -> tuple[str, ...]:
    """What a message asks whether a product has (有反光没 → 反光, 有没有防滑 → 防滑), in order."""
    return tuple(m.group("a") or m.group("b") for m in _HAS_IT.finditer(typed_spellings(reading(text))))


# How much a return refunds, asked (退我多少钱, 能退多少, 退回来多少): the customer's orders and the returns policy
_REFUND_AMOUNT = re.compile(r"退(?:我|给我|回来?|款|还)?(?:能|可以)?(?:退)?(?:多少钱?|几块|几个钱)|能退多少|退款金额|退多少")


def refund_asked(text: str) -> bool:
    """Whether the message asks how much a return refunds."""
    return bool(_REFUND_AMOUNT.search(reading(text)))


# The means of payment, which a message names to tell how it paid (我是用支付宝付的), not to ask about paying
_MEANS_OF_PAYMENT = re.compile(r"微信支付|支付宝|银行卡|信用卡|花呗")


def asks_anything(text: str) -> bool:
    """Whether a message asks at all (a mark or word of a question, or an ask the rules read), or only tells."""
    folded = _MEANS_OF_PAYMENT.sub(" ", reading(text))
    return bool(_ASKS_ANYTHING.search(folded)) or any(p.search(folded) for _, p in _ASKS)


# 那练腹肌用的加厚健身垫呢, 要是用了发现有质量问题呢: what is named or supposed now, however long, asking nothing of its own
_THAT_ONE_DESCRIBED = re.compile(r"^(?:那么?|那要是|要是|如果|万一)[^，,。？?！!]{0,20}(?:呢|嘞)[？?]*$")
# A short order for a quantity of what is being discussed: 买两双, 就它了来三个, 那就要2个.
_QUANTITY_ONLY = re.compile(f"^[^，,。？?！!]{{0,6}}(?:买|来|要|拿|订|下单)\\s*{NUM}\\s*{MEASURE}")


# A count for each of some people, and nothing else (我跟球友一人一支的话呢, 我们仨每人一个呢): of what is discussed
_EACH_COUNT_ONLY = re.compile(f"^[^，,。？?！!]{{0,8}}?(?:每人|一人|每个人|人手|各)(?:买|要|来|拿|配)?\\s*{NUM}\\s*{MEASURE}"
                              r"(?:的话)?(?:呢|嘞|吧)?[？?]*$")


def elliptical(text: str) -> bool:
    """A short follow-up that leaves out what it asks (那篮球呢, 买三盒呢, 要是新客呢, 那两个): it asks
    what the previous message asked, about what it names or about the product in focus — so does one whose first
    clause is such, the rest telling why (三支呢 儿子也吵着要, 手套呢 我踢门将)."""
    folded = reading(text)
    first = _CLAUSE.match(folded)
    rest = folded[first.end():] if first is not None else ""
    return bool(_ELLIPTICAL.match(re.sub(r"\s+", "", folded))) or bool(_ELLIPTICAL.match(folded)) \
        or bool(_EACH_COUNT_ONLY.match(folded)) \
        or bool(_THAT_ONE_DESCRIBED.match(folded)) and not any(p.search(folded) for _, p in _ASKS) \
        or leans_first(text) and not any(p.search(rest) for _, p in _ASKS)   # (…呢 多少钱: asks)


# Saying the last answer was about the wrong thing (搞错了, 不对, 我问的是…, 不是瑜伽垫 是健身垫); not about an order
# the shop got wrong (订单搞错了, 发错货了: a complaint)
_CORRECTION = re.compile(r"[搞弄说看打写问听记想]错了?|理解错|[问说搞弄记][岔混]了?|不对|我是想问|我(?:说|问|找|要问|想问|要找|想找|指)的是|我是说|我是问|应该是"
                         r"|不是[^，,。？?！!\s]{1,12}[，,\s]*(?:而|我说的)?是")
_ABOUT_AN_ORDER = re.compile(r"订单|单号|发货|发错|寄|收到|快递|物流|退|换货")


def corrected_part(text: str) -> str:
    """What a correction says is meant: the message after its last marker (不是拍子，我说的是|球，十个装那个; 说错了，|是两支),
    or the whole message when nothing is written after it (我说的是护踝 is whole; 不是这个 不对)."""
    folded = reading(text)
    markers = list(_CORRECTION.finditer(folded))
    rest = folded[markers[-1].end():].strip(" ，,。.!！") if markers else ""
    return rest if re.search(r"[\u4e00-\u9fffa-z0-9]", rest) else text


def corrects(text: str) -> bool:
    """The message corrects which product the conversation was about: what it names is meant, not what was shown."""
    folded = reading(text)
    return bool(_CORRECTION.search(folded)) and not _ABOUT_AN_ORDER.search(folded)


def refers_back(text: str) -> bool:
    """The message leans on the conversation: elliptical, a pointer (第二个, 便宜的那个, the cheaper one),
    a bare order for a quantity (就它了，买两个), or nothing but a question (多少钱啊, 还有库存不)."""
    folded = reading(text)
    compact = re.sub(r"[\s，,。.!！]+", "", folded)
    return elliptical(text) or reference(folded) is not None or bool(_QUANTITY_ONLY.match(compact)) \
        or bool(_QUANTITY_ONLY.match(english_numbers(compact))) or _only_asking(compact)


# What is left of a message once its asking words are out and that says nothing of what about.
_PAYING_ASKED = re.compile(f"{PAYING}(?={PRICE_WORDS})")
_ASKING_REST = re.compile(r"[啊呀吗呢吧嘛么哦噢哈啦咯嘞呗不没的了有卖还是要请问想下亲你们家店里货应该会~～…？?]")


@lru_cache(maxsize=1024)   # read by refers_back and by describes_need, a property read at every step of a turn
def _only_asking(compact: str) -> bool:
    """多少钱啊, 还有库存不, 有优惠吗, 新客第一单多少钱: a message of asking words (and who is asking) alone,
    about no thing it names."""
    rest = FIRST_PURCHASE.sub("", compact)   # 新客第一单买的话多少钱: who is buying, not what
    rest = _PAYING_ASKED.sub("", rest)   # 大概要花多少钱: how the amount is asked
    for _, pattern in _ASKS:
        rest = pattern.sub("", rest)
    rest = _ASKING_REST.sub("", rest)
    if FIRST_PURCHASE.search(compact):
        rest = _AROUND_FIRST_PURCHASE.sub("", rest)
    return bool(compact) and not rest
