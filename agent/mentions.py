"""Which words of a message name goods, and which point back at goods already shown.

Catalog mentions are found by the catalog's own words (names, short names, aliases); what is left is read
with jieba's part-of-speech tags. Only nouns can name goods: pronouns, particles, verbs, places, amounts,
time words, people and the vocabulary of asking and of the shop's service never do. So "我想第一次下单，
跑步鞋多少钱" names 跑步鞋 and nothing else, "有足球门吗" names a thing (足球门) the catalog word 足球 does
not cover, and "那买三个呢" names nothing at all — it refers back, or the customer must be asked.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import lru_cache

import jieba
import jieba.posseg

from retrieval.bridge import names_an_object, senses
from retrieval.text import is_han
from retrieval.thesaurus import filed, files_as_goods, names_material

jieba.setLogLevel(logging.WARNING)

# Tags of words that can be part of the name of goods (jieba/ICTCLAS tag set): nouns, idiomatic nouns,
# proper nouns a customer coins for goods (滑雪板/nr, 高尔夫球/nr), English words, verbal nouns.
_NOUN_TAGS = frozenset({"n", "nz", "ng", "nr", "nrt", "nrfg", "l", "eng", "vn"})   # not ns (places), nt, t
_THING_TAGS = frozenset({"n", "nz", "ng"})   # …of which common nouns only (毛 of 搞毛 is tagged a name)

# Nouns that are never goods, by family. A family is a kind of word, not a phrasing: every member of it
# reads the same way in any message. Three families are shared with shop talk (below): the words a customer
# calls the shop's staff by, the shop's own premises, and goods in general.
_STAFF = set("亲 亲们 老板 店家 掌柜 客服 人工".split())
_PREMISES_WORDS = set("店 店里 店铺 本店 你们家".split())
_GENERIC_GOODS = set("东西 商品 产品 宝贝 玩意 玩意儿 装备 用品 器材 运动装备 运动用品".split())
_PEOPLE = _STAFF | set("我 你 您 他 她 人 大人 小孩 孩子 儿子 女儿 宝宝 老婆 老公 媳妇 爸爸 妈妈 爸 妈 爷爷 奶奶 朋友 同学 同事 家人 "
              "男朋友 女朋友 对象 男生 女生 学生 老人 新手 小白 初学者 客户 顾客 客人 经理 领导 "
              "管理员 真人 机器人 跑者 选手 自己 大家 朋友们 姐妹 兄弟 用户 新用户 老用户 新客户 老客户 老客 "
              "新人 会员 粉丝 买家 卖家".split())
# The words of asking about an aspect: never a thing (多长 is tagged as a noun).
_ASPECT = set("价 价格 价钱 售价 原价 到手价 单价 总价 报价 货 现货 库存 尺码 尺寸 号 码 码数 鞋码 颜色 材质 面料 重量 容量 "
              "长度 宽度 高度 厚度 度数 规格 参数 型号 款式 质量 续航 多长 多大 多重 多宽 多高 多厚 多久 多少 几号 首次 第一次 "
              "首单 新客 优惠 活动 折扣 赠品 包邮 运费".split())
_SHOP = _PREMISES_WORDS | _GENERIC_GOODS | set("贵店 网店 线上 线下 实体 门店 官方 平台 系统 指令 提示词 规则 设定 管理 后台 数据库 程序 代码 "
            "订单 单 单号 快递 物流 发票 抬头 税号 运费 邮费 地址 售后 质保 保修 退货 换货 退款 发货 收货 包邮 "
            "活动 优惠 折扣 价格 价钱 价 钱 块 元 预算 库存 货 现货 尺码 尺寸 码 号 码数 鞋码 颜色 材质 重量 规格 参数 "
            "款 款式 类 系列 问题 情况 时间 时候 天 小时 分钟 下单 首单 新客 会员 账号 服务 质量 "
            "效果 区别 差别 性价比 推荐 评价 好评 差评 照片 图片 链接 态度 体验 信息 消息 电话 微信 支付宝 银行卡 "
            "名字 意思 一下 地方 哪里 这里 那里 现在 今天 明天 昨天 周末 上次 刚才 之前 之后 以后 以前 方面 部分 "
            "感觉 心情 天气 作业 笑话 股票 新闻 事情 事 话 东东 价位 档次 牌子 品牌 赠品 礼物 生日 节日 双十一 "
            "垃圾 骗子 差劲 服务态度 投诉 意见 建议 好处 坏处 优点 缺点 用处 作用 功能 用途 场地 场合 水平 体型 "
            "体重 身高 脚型 脚长 脚宽 脚背 足弓 膝盖 脚踝 手腕 腰 腿 脚 手 头 眼睛 身体 肌肉 关节 皮肤 手感 脚感".split())
# Pleasantries and feelings, which jieba sometimes tags as nouns.
_SOCIAL = set("谢谢 感谢 多谢 谢了 你好 您好 哈喽 再见 拜拜 晚安 早安 辛苦 麻烦 不好意思 抱歉 哈哈 嗯嗯 好的 收到 ok".split())
# English words of asking, never goods.
_ENGLISH = set("the a an one ones it this that these those them of to for and or with what how much many is are "
               "was do does can could would will please pls thanks thank you hi hello about price cost costs "
               "cheaper cheapest expensive which better best buy take get want need make instead ok okay i i'll "
               "me my we our your have has there any some more less than in on at stock available size "
               # a budget's words (under 300 yuan), never goods
               "under below over above within around about up max maximum budget yuan rmb cny kuai buck bucks "
               "dollar dollars sell selling sold got do don't you're ll "
               # chat words that accept or agree, never goods
               "fine great good sure yes yeah yep no nope just then so well alright cool nice right "
               # asking about goods in English, and chat slang typed in letters (yyds, nsdd: 你说得对), never goods
               "money order orders first discount discounts sale deal deals promo return refund ship shipping invoice "
               "thx plz lol omg btw yyds nsdd xswl awsl dddd zqsg u1s1 bdjw plmm".split())
# Browsing: asking for goods in general — to be shown around, recommended to, helped to choose — and what
# is good of goods in general (新品, 爆款, 热卖): never goods, never a need.
_BROWSING = set("推荐 介绍 看 看看 瞅 瞅瞅 瞧 瞧瞧 逛 逛逛 挑 挑挑 选 选选 帮 帮忙 随便 主要 最近 新品 新款 新货 "
                "爆款 热门 热卖 好货 好物 好东西 卖得 值得 受欢迎 好卖 畅销 人气 东东 好 新 火 有些 哪些 些 什么样 "
                "买点 添 添点 想好 没想好 运动".split())   # (运动: everything here is for sport)   # 买点东西: jieba's 买点 (a trading term) is buying some
_NOT_GOODS = frozenset(_PEOPLE | _SHOP | _ASPECT | _SOCIAL | _ENGLISH | _BROWSING)
# Verbs that belong to the asking, never to a name (拳击手套 keeps its 拳击; 买手套 drops its 买).
_ASKING_VERBS = frozenset("有 有没有 没有 卖 卖不卖 买 想 想要 想买 要买 打算 打算买 准备买 想找 想问 要 需要 来 给 拿 找 "
                          "看 看看 问 请问 推荐 是 算 能 可以 "
                          "会 用 穿 送 带 换 退 发 寄 到 适合 合适 比较 对比 介绍 考虑 打算 准备 喜欢 觉得 知道 就要 不卖 没卖 应该 顺便 顺带 问下 问一下 问问 打听 打听一下".split())
# The Chinese words of those families and of asking: what a message typed in pinyin may spell besides goods
SHOP_TALK = frozenset(w for w in _NOT_GOODS | _ASKING_VERBS if not w.isascii())
ENGLISH_WORDS = frozenset(_ENGLISH)
# The shop's measure words: 第二个, 那双, 这款 point at goods; 第一次 does not.
MEASURE_WORDS = "个款双支件只张根盒把套条副瓶罐筒种样台顶块"
_ORDINALS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
             "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9}
_ORDINAL = re.compile(f"第\\s*([一二两三四五六七八九十1-9])\\s*[{MEASURE_WORDS}]")
_LAST = re.compile(f"(?:最后|后面|后一|下面)的?(?:那|这)?[{MEASURE_WORDS}]|(?:最后|后面)那")
_FIRST = re.compile(f"(?:前面|前一|上面|最前)的?(?:那|这)?[{MEASURE_WORDS}]|最前面")
_CHEAPEST = re.compile(f"(?:便宜|实惠|低价|价格低|价低)(?:点|些|一点)?的?(?:那|这)?(?:[{MEASURE_WORDS}]|个)|最便宜的"
                       rf"|(?:要|就要|拿|选|买)(?:便宜|实惠)(?:点|些|一点)?的(?=[，,。！!？?\s吧]|$)"   # 那就要便宜的，
                       f"|哪[{MEASURE_WORDS}]?(?:是|的价格|价格|价钱)?最(?:便宜|实惠|低)")   # 哪个最便宜: of those shown
_DEAREST = re.compile(f"(?:贵|价格高|价高|高档)(?:点|些|一点)?的?(?:那|这)?(?:[{MEASURE_WORDS}]|个)|最贵的"
                      rf"|(?:要|就要|拿|选|买)贵(?:点|些|一点)?的(?=[，,。！!？?\s吧]|$)"
                      f"|哪[{MEASURE_WORDS}]?(?:是|的价格|价格|价钱)?最(?:贵|高)")
# The most in stock (哪个库存最多, 哪款现货最充足, 剩得最多的): of those shown, or the first of a stock order
FULLEST = re.compile(r"(?:库存|存货|现货|货)(?:最多|最充足|最足|最大)|剩(?:得|的|下)?最多|数量最多|最多货")
_EN_POINTER = (("cheapest", re.compile(r"\b(?:the )?(?:cheaper|cheapest|less expensive)(?: one)?\b")),
               ("dearest", re.compile(r"\b(?:the )?(?:more expensive|pricier|dearer)(?: one)?\b")),
               ("first", re.compile(r"\bthe first(?: one)?\b|\bthe former\b")),
               ("last", re.compile(r"\bthe (?:last|second|latter)(?: one)?\b")),
               ("this", re.compile(r"\b(?:that|this|these|those) ones?\b|\bof (?:them|those|these)\b|\bit\b")))
_THIS = re.compile(f"[这那]\\s*[{MEASURE_WORDS}]|它|刚才的|刚刚的|上面的|就这|这些|那些|[这那]俩|[这那]两")

# 哪个合适, 哪款比较好: which of the goods shown suits what the message tells
_WHICH_FITS = re.compile(r"哪(?:个|款|种|双|只|一个|一款|一种|一双)(?:比较|更|最)?(?:合适|适合|好用|好|值得)")


@dataclass(frozen=True)
class Reference:
    """A pointer back at the products of the last answer: `first`, `last`, `cheapest`, `dearest`, `fullest`,
    `this` (the one being discussed), `which` (the one of those shown the message describes), or an ordinal
    position (1-based)."""

    kind: str
    position: int | None = None


def reference(text: str) -> Reference | None:
    """How `text` (folded) points back at goods already shown, if it does."""
    if m := _ORDINAL.search(text):
        return Reference("ordinal", _ORDINALS[m.group(1)])
    for kind, pattern in (("last", _LAST), ("first", _FIRST), ("cheapest", _CHEAPEST), ("dearest", _DEAREST),
                          ("fullest", FULLEST)):
        if pattern.search(text):
            return Reference(kind)
    if _THIS.search(text):
        return Reference("this")
    if _WHICH_FITS.search(text):
        return Reference("which")
    for kind, pattern in _EN_POINTER:
        if pattern.search(text):
            return Reference(kind)
    return None


def _reduplicated(word: str) -> bool:
    """试试, 看看, 问问: a verb doubled to say "try a little" (jieba may tag it a noun), never goods."""
    return len(word) == 2 and word[0] == word[1]


def _premises(word: str) -> bool:
    """A word headed by 店 is the shop's own premises (实体店, 线下门店, 旗舰店), never goods it sells."""
    return word.endswith("店")


_WHICH = re.compile(r"哪|什么|啥")


def _a_group(word: str) -> bool:
    """A group of people (跑团, 校队, 骑行社, 俱乐部): whom the goods are for, never goods."""
    return len(word) >= 2 and word.endswith(("团", "队", "社", "俱乐部", "协会"))


def _idiom_names_goods(word: str) -> bool:
    """Whether a word jieba tags an idiom or set phrase (l) names a thing: the thesaurus files it as goods (发令枪),
    or, not filing it, files its end so (时尚手机: 机) — most such words are actions told (买回来, 用不上, 拿回去)."""
    if files_as_goods(word):
        return True
    return not filed(word) and (files_as_goods(word[-2:]) or files_as_goods(word[-1:]))


def _is_goods_word(word: str, flag: str) -> bool:
    return (flag in _NOUN_TAGS and word not in _NOT_GOODS and (flag != "l" or _idiom_names_goods(word)) and not _premises(word) and not _reduplicated(word)
            and not _a_group(word)
            and not word.isdigit() and not re.fullmatch(r"[a-z]", word) and not is_amount(word)
            and not _WHICH.match(word))   # 哪几个 (tagged an idiom): a question word, never goods


def is_amount(word: str) -> bool:
    return bool(re.fullmatch(r"[\d.一二两三四五六七八九十百千万几多]+(?:块钱|[个件双支盒块元钱斤公斤米号码岁人天筒])?", word))


# How a price is asked right after the thing priced (足球多少钱, 护膝多钱, 篮球啥价): shared by the reader's word rules.
PRICE_WORDS = "多少钱|多钱|几多钱|几钱|怎么卖|(?:什么|啥)价|几块钱|价格"

# How the amount is asked between the thing priced and the price words (护具一共要付多少钱, 实际得花多少钱): the
# paying, never part of the thing
PAYING = "(?:一共|总共|总计|合计|实际|实际上|大概|大约|差不多)?(?:要|得|需要|会)?(?:付|花|掏|给|交)?"

# The thing asked for in a question about having, selling or a price (有X吗, 有没有X, 卖X吗, X多少钱): the
# whole object, where jieba's tags split a compound (瑜伽/垫, 登山/杖) or glue the verb to it (有泳/镜).
_FRAMED = re.compile(
    f"(?:有没有|卖不卖|在卖|有|卖)(?:卖|在卖)?[一两几\\d]?[{MEASURE_WORDS}]?(?P<object>[\u4e00-\u9fff]{{2,8}}?)"
    f"的?(?:吗|么|嘛|呢|卖吗|卖|没有|不|[？?。，,！!]|$)"
    f"|(?P<priced>[\u4e00-\u9fff]{{2,8}}?){PAYING}(?:{PRICE_WORDS})")


def _opens_another_word(text: str, at: int) -> bool:
    """Whether the 有 at `at` begins a dictionary word that does not mean to have (有些 some, 有点 a little,
    有时 sometimes): then it opens no question about having."""
    if text[at] != "有":
        return False
    position = 0
    for word in jieba.lcut(text):
        if position == at:
            meanings = senses(word) if len(word) > 1 else ()
            return bool(meanings) and meanings[0][0] not in ("have", "ther", "do")
        position += len(word)
        if position > at:
            return False
    return False


def _measure_head(tokens: list, k: int) -> bool:
    """Whether the k-th of a phrase's tagged words is a one-character measure word that ends it after a noun:
    the thing's own head (瑜伽块, a yoga block), not money (几块) or a count."""
    word = tokens[k][2]
    return k == len(tokens) - 1 and k > 0 and len(word) == 1 and word in MEASURE_WORDS \
        and tokens[k - 1][3] in _NOUN_TAGS


# Sentence-final particles, as people type them after the thing asked (有没有哑铃啊).
_PARTICLES = frozenset("啊 呀 呢 吧 嘛 哈 哦 啦 捏 咧 哇 噢".split())
# jieba's tags of idioms and set phrases, which its dictionary gives some things too (接力棒: i)
_SET_PHRASES = ("i", "l")


def framed_objects(text: str, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of the things asked for in `text` (folded), outside the catalog spans `covered`; leading words
    that are not the thing (请问, 你们, 这个, asking verbs) are left out; a span must hold a noun."""
    spans = []
    for match in _FRAMED.finditer(text):
        group = "object" if match.group("object") else "priced"
        if group == "object" and _opens_another_word(text, match.start()):
            continue   # 有些动作手够不到: 有些 (some) opens no question about having
        start, end = match.span(group)
        if any(s < end and start < e for s, e in covered):
            continue
        tokens, position = [], start
        for token in _tokens(text[start:end]) if start == 0 else _asking_tail_apart(jieba.posseg.lcut(text[start:end])):
            tokens.append((position, position + len(token.word), token.word, token.flag))
            position += len(token.word)
        while tokens and (tokens[0][3] in {"r", "d", "p", "c", "u", "y", "m", "q"} or tokens[0][2] in _ASKING_VERBS
                          or tokens[0][2] in _NOT_GOODS or tokens[0][2] in _HELPING or tokens[0][2] in ("请问", "问下")):
            tokens.pop(0)
        while tokens and (tokens[-1][3] == "y" or tokens[-1][2] in _PARTICLES):
            tokens.pop()   # 有没有旱冰鞋啊: the goods without the particle (jieba may tag 啊 otherwise)
        if "的" in (words := [t[2] for t in tokens]) and len("".join(words[len(words) - words[::-1].index("的"):])) >= 2:
            tokens = tokens[len(words) - words[::-1].index("的"):]   # 适合跑步的耳机: the thing is 耳机
        if tokens and tokens[-1][1] - tokens[0][0] >= 2 \
                and any(t[3] in _NOUN_TAGS and (t[3] != "l" or _idiom_names_goods(t[2])) or t[3] == "ns"
                        or t[3] in _SET_PHRASES and files_as_goods(t[2]) for t in tokens) \
                and not any(t[2] in _NOT_GOODS and not _measure_head(tokens, k) for k, t in enumerate(tokens)):
            first, last = tokens[0][0], tokens[-1][1]
            # 有氧运动用的垫子有吗: the frame opened at 有氧, so the object ends with the asking 有 (jieba may cut
            # it into another word: 工具有 → 工 / 具有)
            while last - first > 2 and text[last - 1] == "有":
                last -= 1
            if text[first:last].lstrip(MEASURE_WORDS) in _NOT_GOODS:
                continue   # 有几个码: the frame opened inside the count (个 + 码), and 码 is asked of goods
            spans.append((first, last))
    return spans


_GRADE_NUMBERS = {c: i for i, c in enumerate("一二三四五六", start=1)} | {str(i): i for i in range(1, 7)}
# a school year, as people say a child's age (上三年级的闺女, 初二的儿子): the age it means, for the embedder
_SCHOOL_YEAR = re.compile(r"(?:小学)?(?P<primary>[一二三四五六1-6])年级|初(?P<middle>[一二三])(?![次步级])|"
                          r"高(?P<high>[一二三])(?![点些级])|(?P<kindergarten>幼儿园)")


def with_ages(text: str) -> str:
    """`text` with the age a school year means written after it (上三年级的闺女 → 上三年级（9岁）的闺女): an embedder
    reads an age, not a school year, as a child's."""
    def age(m: re.Match[str]) -> str:
        if m.group("kindergarten"):
            years = 5
        else:
            level, base = next((m.group(g), b) for g, b in (("primary", 6), ("middle", 12), ("high", 15)) if m.group(g))
            years = base + _GRADE_NUMBERS[level]
        return f"{m.group(0)}（{years}岁）"
    return _SCHOOL_YEAR.sub(age, text)


def never_goods(word: str) -> bool:
    """A word of one of the families that never name goods (people, the shop, aspects of goods, social words…)."""
    return word in _NOT_GOODS


def is_asking_verb(word: str) -> bool:
    """A word of asking, buying or choosing (有没有, 想买, 推荐, 就要): it says nothing of which goods."""
    return word in _ASKING_VERBS


def without_asking_lead(phrase: str) -> str:
    """`phrase` without the asking or buying words it opens with, by jieba's words (有卖拳击用的 → 拳击用的;
    有氧运动用的 keeps 有氧, a word of its own)."""
    words = jieba.lcut(phrase)
    while words and words[0] in _ASKING_VERBS:
        words.pop(0)
    return "".join(words)


_JOINING = "和跟与及或"


def joined_goods(phrase: str) -> list[str]:
    """The goods a phrase joins (冰爪和冰镐 → 冰爪, 冰镐; jieba may tag 和冰镐 a name): split at a joining
    character with two characters or more on each side, unless the dictionary holds a word across it
    (和服, 跟腱, 与会); [phrase] when it joins nothing."""
    pieces, start = [], 0
    for at, char in enumerate(phrase):
        if char in _JOINING and at - start >= 2 and len(phrase) - at > 2 \
                and not senses(phrase[at - 1:at + 1]) and not senses(phrase[at:at + 2]):
            pieces.append(phrase[start:at])
            start = at + 1
    return [*pieces, phrase[start:]] if pieces else [phrase]


# …一筒, …两盒, and a count taken after its goods (拍子拿两个, 球拍来三副, 护膝要一对): the goods before them
_COUNT_AFTER = re.compile(r"(?<=[\u4e00-\u9fff])(?:[拿来要买]|再来|再要)?[一两二三四五六七八九十几\d]+[\u4e00-\u9fff]$")
_ALL_AFTER = re.compile(r"(?<=[\u4e00-\u9fff])(?:都|全都|全部|也)$")   # 鞋子都, 球拍全都: the goods, then "all"
_WHATEVER = re.compile(r"(?:都|也|就)(?:行|可以|成|好)$")   # …都行: whichever will do, not part of the goods
_SIZE_CODE = re.compile(r"\d?x{0,3}[sml]")   # xs, m, xxl, 3xl: a size, never goods


def _ends_in_action(phrase: str) -> bool:
    """Whether a phrase's last word is one the dictionary reads as an action (爬山: to climb a mountain): goods
    are named by a thing (登山包 ends in 包)."""
    last = jieba.lcut(phrase)[-1] if phrase else ""
    return len(last) >= 2 and bool(senses(last)) and not names_an_object(last)


def _after_done(phrase: str) -> str:
    """A phrase without an action done that opens it — a verb, 完 and its one-character object (游完泳, 打完球,
    完球 of 踢完球鞋子: what is left, 鞋子, may be goods) — unless 完 begins a word of the dictionary (完美)."""
    at = phrase.find("完")
    if at < 0 or at > 1 or jieba.dt.FREQ.get(phrase[at:at + 2]):
        return phrase
    return phrase[at + 2:]


def goods_phrases(text: str, covered: list[tuple[int, int]]) -> list[str]:
    """Noun phrases of `text` (folded) outside the catalog spans `covered` that may name goods, in order:
    runs of nouns, with a modifier verb kept when a noun follows it (拳击手套); the whole thing asked for
    in a question about having, selling or a price, where the tags split it (瑜伽垫, 登山杖)."""
    framed = framed_objects(text, covered)
    phrases = [text[s:e] for s, e in framed if not _premises(text[s:e])]
    for phrase in _tagged_phrases(text, covered):
        if not any(phrase in whole or whole in phrase for whole in phrases):
            phrases.append(phrase)
    phrases = [_COUNT_AFTER.sub("", p) or p for p in phrases]        # 羽球一桶: 羽球 (the count is read apart)
    phrases = [_measure_apart(p) for p in phrases]                   # 想买个球: 球 (jieba has 个球 as a word)
    phrases = [_A_NOT_A.sub("", p) or p for p in phrases]            # 带不带盒子: 盒子, asked yes or no
    phrases = [w for p in phrases if (w := _after_done(p))]          # 游完泳, 踢完球鞋子: an action done, then goods
    phrases = [w for p in phrases if (w := _WHATEVER.sub("", p)) == p or len(w) >= 2]   # 啥球都行: any ball, not 球都行
    phrases = [_ALL_AFTER.sub("", p) or p for p in phrases]          # 鞋子都啥价位: the shoes, all of them
    phrases = [p for p in phrases if not _SIZE_CODE.fullmatch(p)   # 有XXL吗: a size asked, not goods
               and not _ends_in_action(p)]                      # 背着爬山: an activity, not goods
    order = {phrase: text.find(phrase) for phrase in phrases}
    starts = set(order.values())
    # 能装衣服的运动包: what comes right before 的 and another phrase describes that one, it is no goods itself
    phrases = [p for p in phrases if not (text[order[p] + len(p):order[p] + len(p) + 1] == "的"
                                          and order[p] + len(p) + 1 in starts)]
    return sorted(phrases, key=order.__getitem__)


# a verb asked yes or no before what it is asked of (带不带盒子, 送不送袋子, 有没有)
_A_NOT_A = re.compile(r"^([\u4e00-\u9fff])[不没]\1")


def _measure_apart(phrase: str) -> str:
    """A phrase without the measure word jieba glued to its front (个球, 双鞋, 副手套: 球, 鞋, 手套), unless the
    measure word and the character after it are a word of the dictionary (双杠, 台球杆, 把手)."""
    if len(phrase) >= 2 and phrase[0] in MEASURE_WORDS and is_han(phrase[1]) and not senses(phrase[:2]):
        return phrase[1:]
    # …nor a verb of getting and its measure word before it (添个沙袋, 换支拍子, 再配块砖: 沙袋, 拍子, 砖)
    if (got := _GETTING.match(phrase)) is not None and got.end() < len(phrase):
        return phrase[got.end():]
    return phrase


_GETTING = re.compile(f"(?:再|又|多|先)?(?:添置|添|配|换|买|来|拿|要|入|整|搞|弄|购)[{MEASURE_WORDS}](?=[\u4e00-\u9fff])")


def _tokens(text: str) -> list:
    """jieba's tagged words of a message, except that a message never starts with a bare measure word: 台球杆
    is cut 台 (a measure) + 球杆, but 台球 is a word of the dictionary, so 台 begins the noun (台球杆, 双杠).
    (Inside a message 有台球杆吗 is left as jieba cuts it: 来把手套 is 把 + 手套 though 把手 is a word too.)
    Nor is a thing the dictionary names cut after a one-character verb (打底裤, not 打 + 底裤)."""
    tokens = jieba.posseg.lcut(text)
    if len(tokens) >= 2 and tokens[0].flag == "q" and tokens[1].flag.startswith("n") \
            and senses(tokens[0].word + tokens[1].word[0]):
        tokens[:2] = [jieba.posseg.pair(tokens[0].word + tokens[1].word, "n")]
    tokens = _asking_tail_apart(tokens)
    # 那缓震的呢 / 那大号的呢: jieba reads 那缓震 as a person's name, 那大 as a place — the pointer 那 and what follows
    tokens = [part for t in tokens for part in
              ([jieba.posseg.pair(t.word[0], "r"), jieba.posseg.pair(t.word[1:], "n")]
               if len(t.word) >= 2 and t.word[0] in "那这" and t.flag in ("nr", "ns") else [t])]
    # a one-character verb that jieba cut off the front of a thing the dictionary names (打 + 底裤: 打底裤,
    # leggings — not underpants), joined back; 打篮球 (to play basketball) stays an action
    k = 0
    while k < len(tokens) - 1:
        verb, noun = tokens[k], tokens[k + 1]
        if len(verb.word) == 1 and verb.flag.startswith("v") and verb.word not in _ASKING_VERBS \
                and noun.flag in _THING_TAGS and _is_goods_word(noun.word, noun.flag) \
                and names_an_object(verb.word + noun.word):
            tokens[k:k + 2] = [jieba.posseg.pair(verb.word + noun.word, "n")]
        k += 1
    return tokens


def _asking_tail_apart(tokens: list) -> list:
    """jieba's words with an asking tail cut off a word that names no goods (货不 of 还有货不, 有货不): 货 and 不,
    and a having verb before it apart too (有 + 货 + 不)."""
    out = []
    for token in tokens:
        word, tail = token.word[:-1], token.word[-1:]
        having = "有" if word.startswith("有") and word[1:] in _NOT_GOODS else ""
        if tail and tail in "不没吗" and (word in _NOT_GOODS or having):
            out += [jieba.posseg.pair("有", "v")] if having else []
            out += [jieba.posseg.pair(word[len(having):], "n"), jieba.posseg.pair(tail, "d")]
        else:
            out.append(token)
    return out


def _tagged_phrases(text: str, covered: list[tuple[int, int]]) -> list[str]:
    phrases, run, pending = [], [], ""
    position = 0
    for token in _tokens(text):
        start, end = position, position + len(token.word)
        position = end
        inside = any(s <= start and end <= e for s, e in covered)   # a known word, or part of one
        if not inside and _is_goods_word(token.word, token.flag):
            run.append(pending + token.word)
            pending = ""
            continue
        if not inside and token.flag.startswith("v") and token.word not in _ASKING_VERBS and len(token.word) >= 2:
            if run:
                phrases.append("".join(run))
                run = []
            pending = token.word   # kept only if a noun follows
            continue
        pending = ""
        if run:
            phrases.append("".join(run))
            run = []
    if run:
        phrases.append("".join(run))
    return [p for p in phrases if len(p) >= 2 or re.fullmatch(r"[a-z]{3,}", p)]


def extended_names(text: str, spans: list[tuple[int, int, str]], names: set[str],
                   own: frozenset[str] = frozenset()) -> str:
    """A catalog name written as part of a longer noun for another thing ('足球门', '篮球架', '篮球打气筒'): that
    noun, or '' when every catalog mention stands as itself. `own`: words after a name that its product's record
    holds (弹力带阻力: the band's own resistance, not another thing)."""
    tokens, position = [], 0
    for token in jieba.posseg.lcut(text):
        tokens.append((position, position + len(token.word), token.word, token.flag))
        position += len(token.word)
    asking = asks_for_goods(text)
    for start, end, _ in spans:
        for s, e, word, flag in tokens:
            if s <= start and end <= e and (s, e) != (start, end) and flag in _NOUN_TAGS \
                    and word not in names and word not in _NOT_GOODS \
                    and sum(s <= s2 and e2 <= e for s2, e2, _ in spans) < 2 \
                    and (not _measure_tail(word[end - s:]) or senses(word)):
                return word          # 篮球架: one jieba word holding the name (乒乓球台: a table, not a count;
                #                      护膝护踝, two names one word, is the two)
            if s == end and flag in ("n", "ng", "q") and len(word) == 1 and word not in _NOT_GOODS \
                    and word not in names and not any(word.startswith(n) for n in names) \
                    and not any(s2 == s for s2, _, _ in spans):   # 哑铃壶铃: 壶 begins another name
                return text[start:e]  # 足球 + 门
            of = asking and s == end + 1 and text[end] == "的"   # 乒乓拍的胶皮有单卖的吗
            if (s == end or of) and flag in _THING_TAGS and (len(word) > 1 or of) and word not in _NOT_GOODS \
                    and word not in own and not any(n in word for n in names) \
                    and (names_an_object(word) or (not senses(word) and _is_goods_word(word, flag)
                                                   and (len(word) >= 3 or of or asking and files_as_goods(word)))) \
                    and not any(end <= s2 < e for s2, _, _ in spans):
                # 篮球 + 打气筒, 轮滑鞋 + 轮子: a thing for the product, not the product; a word the dictionary lacks
                # counts when it is long (网球拍 + 避震器), follows 的 (乒乓拍的胶皮) or, asked for, is a thing Cilin
                # files (乒乓球 + 胶皮有卖吗): jieba calls 能装, 几筒 nouns
                return text[start:e]
        if asking and (thing := _thing_after(text, end, own)) and not any(end <= s2 < thing for s2, _, _ in spans):
            return text[start:thing]   # 足球 + 打气针, 网球拍 + 手胶, 手表 + 的 + 充电线: jieba cuts the thing apart
    return ""


def dictionary_tag(word: str) -> str:
    """A word's part of speech by jieba's dictionary, out of context ('' when it has none): its tagger may read
    装 of 能装衣服 as a noun, the dictionary says a verb."""
    return jieba.posseg.dt.word_tag_tab.get(word, "")


_NOT_A_MODIFIER = ("v", "d", "m", "q", "p", "r", "c", "a")   # 能装, 大绳: a verb or an adjective, no thing's name


def _thing_after(text: str, end: int, own: frozenset[str]) -> int:
    """Where a thing written right after a product's name (or after its 的) ends, when jieba cuts the thing
    apart as it never cuts a name: an action and the one-character object it is done with (打气 + 针, 充电 + 线),
    or a two-character noun the dictionary does not hold, made of nouns (手 + 胶) or ending in an object (地 + 钉);
    0 when none is (打折吗, 黑色, 男款, 能装, a word its record holds)."""
    at = end + 1 if text[end:end + 1] == "的" else end
    tokens = jieba.posseg.lcut(text[at:at + 8])
    first, second = (tokens + [None, None])[:2]
    if first is None or len(first.word) != 2:
        return 0
    if first.flag in ("v", "vn") and second is not None and len(second.word) == 1 and second.flag in ("n", "ng") \
            and second.word not in _NOT_GOODS and names_an_object(second.word):
        word, rest = first.word + second.word, tokens[2:]
    elif first.flag in _THING_TAGS and not senses(first.word) and first.word not in jieba.dt.FREQ \
            and first.word[-1] not in _NOT_GOODS and first.word[-1] not in MEASURE_WORDS \
            and (all(dictionary_tag(ch) in ("n", "ng") for ch in first.word)
                 or names_an_object(first.word[-1]) and not dictionary_tag(first.word[0]).startswith(_NOT_A_MODIFIER)):
        word, rest = first.word, tokens[1:]
    else:
        return 0
    if word in own or (rest and rest[0].flag in _NOUN_TAGS):   # the thing goes on (训练服装): not read here
        return 0
    return at + len(word)


def _measure_tail(rest: str) -> bool:
    """What follows a name inside one jieba word is a count or pack, not another thing (足球两个)."""
    return not rest or bool(re.fullmatch(f"[{MEASURE_WORDS}们]+", rest))


# How a message asks for goods (a question about having, selling, price or stock, or an order). A noun
# phrase outside these is part of a need told (孩子十岁想踢球, 爬山下坡膝盖疼): never "not sold".
_ASKING_FOR_GOODS = re.compile(
    f"有.{{0,12}}[吗么嘛不没]|有没有|有无|卖|单独?买|{PRICE_WORDS}|多少|几块|价|报价|库存|有货|现货|来\\s*[一两二三四五六七八九十几\\d]+\\s*[{MEASURE_WORDS}]"
    f"|[要买订拿]\\s*[一两二三四五六七八九十几\\d]*\\s*[{MEASURE_WORDS}]|\\b(?:sell|have|how much|price|cost|any)\\b")


def asks_for_goods(text: str) -> bool:
    """Whether `text` (folded) asks for goods — 有X吗, X多少钱, 卖X吗, 来一副X — rather than telling a need
    (有些动作够不到: 有些, some, asks nothing)."""
    at = 0
    while (match := _ASKING_FOR_GOODS.search(text, at)) is not None:
        if not _opens_another_word(text, match.start()):
            return True
        at = match.start() + 1
    return False


# The words of shop talk: greeting, addressing, being shown around or helped to choose, asking in general.
_SHOP_TALK = frozenset(_SOCIAL | _BROWSING | _ASKING_VERBS | _ASPECT | _STAFF | _PREMISES_WORDS | _GENERIC_GOODS | set(
    "店主 店长 在 在吗 你家 家 第一次 去 不 "
    "买点 算下来 算一下 一共 总共 合计 早上好 晚上好 下午好 中午好 早 哈 喽 嗨 hi hello "
    # the shop's own ways of filing its goods and saying they are new
    "品类 类别 种类 类目 分类 上新".split()))
# The words a customer addresses the shop's staff with (jieba may cut 小哥哥 into 小 and 哥哥): taken out first.
_ADDRESS = re.compile("小姐姐|小哥哥|老板娘|美女|帅哥|亲爱的|宝子|亲们|亲"
                      # greetings by the time of day, and the shop's main lines (主打, which jieba cuts as 店主 + 打)
                      "|早上好|上午好|中午好|下午好|晚上好|早安|晚安|主打")
# Tags of the words that can tell a need: nouns (people, places, bodies too), times, verbs, adjectives, idioms.
_TELLING_TAGS = frozenset({*_NOUN_TAGS, "ns", "nt", "j", "s", "t", "a", "ad", "an", "v", "vd", "i"})


@lru_cache(maxsize=1024)   # read by tells_something and tells_only_whom, at every step of a turn
def _told(text: str) -> tuple[str, ...]:
    """The words of `text` (folded) that tell something beyond shop talk, addressing and helping words."""
    return tuple(t.word for t in _tokens(_ADDRESS.sub(" ", text))
                 if t.flag in _TELLING_TAGS and t.word not in _SHOP_TALK and t.word not in _HELPING
                 and t.word.removeprefix("最") not in _SHOP_TALK   # 最火, 最受欢迎: the best of shop talk
                 and not _reduplicated(t.word))


def tells_something(text: str) -> bool:
    """Whether `text` (folded) tells anything of what the customer wants beyond shop talk: 有啥好东西推荐一下,
    想看看你们家的商品, 我第一次来不知道买啥 tell nothing (show me around); 周末想去爬山, 给我老婆买 do."""
    return bool(_told(text))


_GIFT_WORDS = frozenset("礼物 礼品 生日 过生日 节日 惊喜 心意".split())
_AGE = re.compile(r"\d+\s*岁|[一二两三四五六七八九十]+岁")


def tells_only_whom(text: str) -> bool:
    """Whether all `text` (folded) tells beyond shop talk is whom the goods are for, as a gift or not (想给我爸挑个礼物,
    送女朋友个礼物): no sport, use, need or age — what the person likes is still to be asked."""
    told = _told(text)
    return bool(told) and all(w in _PEOPLE or w in _GIFT_WORDS for w in told) and not _AGE.search(text)


# Tags of the words that can say what goods are for or whom: nouns (people too), places, adjectives, verbs.
_QUALIFIER_TAGS = frozenset({*_NOUN_TAGS, "s", "a", "an", "v", "f"})
_HELPING = frozenset("帮 帮忙 下 就 再 还 先 上 里 中 挑 选 挑选 今年 现在 开始 刚 加 再加 配 搭配 加上 外加 一起".split())
# (帮我看看足球, 问下足球, 再加一个足球: words of asking and of adding to an order, never a qualifier)


# Whom goods are for, in groups that exclude each other: a child's is no adult's, a man's no woman's.
WHOM = (frozenset("儿童 童 小孩 孩子 少儿 幼儿 宝宝 小朋友 青少年 小学生 娃".split()), frozenset("成人 大人".split()),
        frozenset("男 男士 男款 男式 男生 男性".split()), frozenset("女 女士 女款 女式 女生 女性".split()))
_OPPOSITE = {0: 1, 1: 0, 2: 3, 3: 2}


def contradicted(words: list[str], record: str) -> str:
    """The first of `words` (what a product's name is qualified with) saying the goods are for someone the record
    says they are not for (儿童 before 轮滑鞋 whose record says 成人, and nothing of a child's), or of a material the
    record does not state (尼龙 before 羽毛球 whose record says 鸭毛: the shop cannot say it is nylon); '' when none is."""
    for word in words:
        group = next((k for k, members in enumerate(WHOM) if word in members), None)
        if group is not None and any(w in record for w in WHOM[_OPPOSITE[group]]) \
                and not any(w in record for w in WHOM[group]):
            return word
        if names_material(word) and word not in record:
            return word
    return ""


def clause_start(text: str, at: int) -> int:
    """Where the clause holding position `at` begins (after the last space or punctuation before it)."""
    return max(text.rfind(mark, 0, at) for mark in " ，,。.!！？?；;") + 1


def contradicted_phrase(text: str, at: int, length: int, record: str) -> str:
    """The thing asked for when words before a mention at `at` (of `length`), in its clause, say what the product's
    record contradicts (儿童轮滑鞋 for 成人轮滑鞋, 尼龙羽毛球 for duck feather): those words and the mention; ''."""
    if at <= 0:
        return ""
    clause = clause_start(text, at)
    word = contradicted(qualifiers(text, at, clause), record)
    return text[text.rfind(word, clause, at):at + length] if word else ""


# Words saying the conversation was about the wrong thing (搞错了 我要问的是篮球): they qualify nothing named after them.
_CORRECTING = set("搞错 弄错 说错 看错 打错 写错 问错 听错 记错 不对 错".split())


def qualifiers(text: str, start: int, since: int = 0) -> list[str]:
    """The words before a mention at `start` (and after `since`, the end of the mention before it) that
    say what it is for or whom (适合小孩踢的足球 → 小孩, 踢; 孩子刚学踢球，给他挑个足球 → 孩子, 学, 踢球;
    室外打的篮球 → 室外, 打); none in 我想买个足球 or 足球和篮球."""
    words = []
    for token in jieba.posseg.lcut(text[since:start]):
        word, flag = token.word, token.flag
        if flag not in _QUALIFIER_TAGS or word in _ASKING_VERBS or word in _HELPING or word in _SHOP or word in _ASPECT \
                or word in _SOCIAL or word in _ENGLISH or word in _CORRECTING or is_amount(word) \
                or len(word.strip()) == 0:
            continue
        words.append(word)
    return words
