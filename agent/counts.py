"""How many and how much a customer message says: counts per product (两个足球, 水壶2个, 各一个, 一对), 块 as
pieces or money, English numbers as numerals, and the budget (300以内, 100元起, under 60 yuan). Part of the
message reader (agent/intent.py); deterministic, numerals through guardrails.figures."""

from __future__ import annotations

import re
from decimal import Decimal

from agent.ruled_out import marker_at
from guardrails.figures import MEASURE, MONEY, NUM, QUANTITY, find_mentions, parse_number

_RANGE = re.compile(f"(?P<lo>{NUM})\\s*(?:元|块钱|块)?\\s*(?:到|至|~|～|-)\\s*(?P<hi>{NUM})\\s*(?:元|块钱|块)?\\s*(?:之间|以内|的|左右)")
_BUDGET = (   # the first that matches decides
    (re.compile(f"(?:预算)?\\s*(?P<n>{NUM})\\s*(?:元|块钱|块)?\\s*(?:左右|上下|附近|差不多)"), "around"),
    (re.compile(f"(?P<n>{NUM})\\s*(?:元|块钱|块)?\\s*(?:出头|多点|多一点)"), "above"),
    (re.compile(f"(?P<n>{NUM})\\s*(?:元|块钱|块)?\\s*(?:以内|以下|之内|内|之下)"), "max"),
    # 预算就180, 预算只有两百, 预算大概300: a budget said with a word between
    (re.compile(f"(?:不超过|不高于|低于|少于|预算(?:就|只有|也就|大概|大约|差不多|是|在|有)?|最多)\\s*(?P<n>{NUM})"), "max"),
    (re.compile(f"(?P<n>{NUM})\\s*(?:元|块钱|块)?\\s*以上"), "min"),
    # 100元起, 200起: a price from; not 一起 (together)
    (re.compile("(?P<n>\\d+(?:\\.\\d+)?)\\s*(?:元|块钱|块)?\\s*起"), "min"),
    (re.compile(f"(?P<n>{NUM})\\s*(?:元|块钱|块)\\s*起"), "min"),
    (re.compile(r"(?:under|below|less than|within|at most|max|no more than|cheaper than)\s*(?:rmb|¥|￥)?\s*(?P<n>\d+)"), "max"),
    (re.compile(r"(?:around|about|roughly)\s*(?:rmb|¥|￥)?\s*(?P<n>\d+)\s*(?:yuan|rmb|元|块)"), "around"),
    (re.compile(r"(?:over|above|more than|at least)\s*(?:rmb|¥|￥)?\s*(?P<n>\d+)"), "min"),
)


def _whole(value: Decimal | None) -> int | None:
    return int(value) if value is not None and value == int(value) and 1 <= value <= 9999 else None


_EN_NUMBERS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
               "eight": "8", "nine": "9", "ten": "10", "a couple of": "2"}
_EN_NUMBER = re.compile(r"(?<![a-z])(" + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True)) + r")(?![a-z])")
_EN_PRONOUN_ONE = re.compile(r"(?<![a-z])(?:the|this|that|which|each|every|another|a|an|[a-z]+er|[a-z]+est)"
                             r"(?:\s+[a-z]+)?\s+$")
# English's measure words: "4 tubes of shuttlecocks", "a pair of knee pads" count the goods after "of"
# (what is counted is the thing named, as 两盒乒乓球 counts 乒乓球); a kind or a property is not a container
_EN_NOT_CONTAINERS = "kinds|types|sorts|colou?rs|sizes|models|brands|styles|versions|lots|most|some|any|all|none|each"
_EN_PARTITIVE = re.compile(r"(?<![a-z\d.])(\d{1,3}|a)个?\s+(?!(?:" + _EN_NOT_CONTAINERS + r")\s)"
                           r"(?:[a-z]+s|pair|box|can|tube|pack|set|bottle|bag|piece|dozen)\s+of\s+")
# a count written in digits before an English word counts that word ("2 footballs") unless the word is
# what the number measures: money, a size or weight, people or seasons a product is made for
_EN_UNITS = ("yuan|rmb|cny|kuai|bucks?|dollars?|usd|元|块|persons?|people|man|men|seasons?|kg|g|grams?|l|"
             "litres?|liters?|ml|cm|mm|m|km|inch(?:es)?|lbs?|oz|mins?|minutes?|hours?|days?|weeks?|months?|years?|"
             "yo|x|percent|%|off|discount|km/h|w|mah|号|码|size|eu|us|uk|cn|plus|or|and|to|-")
_EN_COUNT = re.compile(r"(?<![a-z\d.])(\d{1,3})\s+(?=[a-z])(?!(?:" + _EN_UNITS + r")(?![a-z]))")
_EN_NOT_A_COUNT = re.compile(r"(?:size|sizes|eu|us|uk|no\.?|number|#|码|号)\s*$")   # size 42 shoes: a size


def english_numbers(text: str) -> str:
    """'two of them' → '2个 of them', '4 tubes of shuttlecocks' → '4个 shuttlecocks', '2 footballs' →
    '2个 footballs': English counts as the numerals and measure word the quantity reader knows (same
    length is not kept; positions are only compared within this text)."""
    def count(m: re.Match[str]) -> str:
        if m.group(1) == "one" and _EN_PRONOUN_ONE.search(m.string, 0, m.start()):
            return m.group(0)   # the cheaper one, which one, a blue one: a pronoun, not a count
        return _EN_NUMBERS[m.group(1)] + "个"
    text = _EN_NUMBER.sub(count, text)
    text = _EN_PARTITIVE.sub(lambda m: ("1" if m.group(1) == "a" else m.group(1)) + "个 ", text)
    return _EN_COUNT.sub(lambda m: m.group(0) if _EN_NOT_A_COUNT.search(m.string, 0, m.start())
                         else m.group(1) + "个 ", text)


# a promotion's rule quoted by the customer (不是买三送一吗，我要8盒): its numbers are the rule's, not the count the
# customer gives beside it (alone, 买三送一的话多少钱, the rule's count is what they mean to buy)
_PROMOTION_RULE = re.compile(f"买\\s*{NUM}\\s*{MEASURE}?\\s*送\\s*{NUM}\\s*{MEASURE}?|满\\s*{NUM}\\s*{MEASURE}?\\s*(?:元|块)?\\s*"
                             f"(?:减|送|包邮|打|享)|{NUM}\\s*{MEASURE}?\\s*(?:及|或)以上")

_BUY_COUNT = re.compile(f"买\\s*{NUM}\\s*{MEASURE}")


def buys_a_count(text: str) -> bool:
    """Whether the message says how many it buys (乒乓球买6盒多少钱: six paid for), not how many it wants to end up
    with (我想要4盒, 要8盒 送的算进去): a promotion's rule quoted (买三送一) is no count bought."""
    return bool(_BUY_COUNT.search(_PROMOTION_RULE.sub(" ", text)))


# a unit asked about (乒乓球一盒几个, 平均一支多少钱) is not the count ordered, which a buying verb gives (买两个几天到)
# (两条多少钱, 两双多少: the count priced; 一盒多少个: the unit's content asked)
_ASKED_ABOUT = re.compile(f"\\s*(?:几|多少(?=\\s*(?:{MEASURE}|斤|克|公斤|升|毫升|米|厘米|号|码|人))|多重|多大|多长|有几|有多)")
_PER_UNIT = re.compile(r"(?:平均|每|单)\s*$")
_PER_PERSON = re.compile(r"(?:一人|每人|一个人|每个人|人手|一家)\s*$")   # 一人一支: what each person gets
# the count totalled: 两副一共, 两双跑步鞋一共 — nothing between but the goods (再加一根跳绳一共 totals two things)
_TOTALLED = re.compile(r"\s*(?:(?![一二两三四五六七八九十几\d]|再|加|和|跟|还)[\u4e00-\u9fff]){0,6}?(?:一共|总共|合计|加起来|总计|共计)")
_ORDERED = re.compile(r"(?:买|要|来|拿|订|购|下单)\s*$")


_NOT_PIECES = re.compile(r"钱|元|以内|以下|以上|之内|左右|上下|多(?!少)|出头|的|毛|一(?![共起下样些])|[\d二两三四五六七八九十]")
_PRICE_ASKED = re.compile(r"\s*(?:多少|一共|总共|合计|怎么卖|什么价|[，,。？?！!]|$)")


def _pieces(text: str, mention, spans: list[tuple[int, int, str]]) -> bool:
    """块 as a measure word (瑜伽砖两块多少钱, 球拍来两块, 两块瑜伽砖加一张垫子), not money: a few 块 after a buying
    verb, right before a product's name, or right after one with its price asked, and no money word after it
    (两块钱, 200块以内, 五十块能卖吗)."""
    if mention.kind != MONEY or not text[mention.start:mention.end].endswith("块") or _NOT_PIECES.match(text, mention.end):
        return False
    if mention.value is None or mention.value > 20:
        return False   # 五十块: a price offered, not fifty pieces
    if _ORDERED.search(text, 0, mention.start) or any(s == mention.end for s, _, _ in spans):   # 两块瑜伽砖
        return True
    # (瑜伽砖 两块 多少钱: a space between the name and its count)
    return bool(_PRICE_ASKED.match(text, mention.end)) and any(not text[e:mention.start].strip() for _, e, _ in spans
                                                               if e <= mention.start)


def _counts_ordered(text: str, mentions: list) -> list:
    """The counts that say how many are bought: not a quoted promotion's numbers, nor a unit asked about
    (一盒几个, 平均一支), nor what each person gets (一人一支) — unless the message has no other count."""
    rules = [(m.start(), m.end()) for m in _PROMOTION_RULE.finditer(text)]
    return [m for m in mentions if not any(s <= m.start < e for s, e in rules) and not _PER_UNIT.search(text, 0, m.start)
            and not _PER_PERSON.search(text, 0, m.start)
            and not (_ASKED_ABOUT.match(text, m.end) and not _ORDERED.search(text, 0, m.start))] or mentions


# What may stand between a count and the name it counts (一顶双人帐篷: 双人; 两双新的跑鞋): a few characters of no count
# and no joining word
_MODIFIER_BETWEEN = re.compile(r"(?:(?![加和跟与及还再、，,。？?！!\s\d一二两三四五六七八九十几])[\u4e00-\u9fff]){1,3}")


def quantities(text: str, spans: list[tuple[int, int, str]]) -> tuple[dict[str, int], int | None, frozenset[str], bool]:
    """Units asked per product (两个足球, 水壶2个, 各一个) and overall, then which of those counts were in pairs
    (一对): the products', and whether the overall one was. The text has English counts as numerals already.
    A message keeps one order: when its first product has its count after it (T恤三件 短裤两条), every count
    follows its product."""
    found = find_mentions(text)
    mentions = [m for m in found if (m.kind == QUANTITY or _pieces(text, m, spans)) and _whole(m.value)
                and not text[max(0, m.start - 1):m.start] == "第"   # 第一个 is a position, not a count
                and text[m.end:m.end + 1] not in ("人", "装")]   # 两个人睡的: people; 10只装: a pack's size
    mentions = _counts_ordered(text, mentions)
    each = re.search(f"各(?:买|要|来)?\\s*(?P<n>{NUM})\\s*{MEASURE}", text)
    per: dict[str, int] = {}
    paired: set[str] = set()
    befores = [[m for m in mentions if 0 <= start - m.end <= 1 or 0 <= start - m.end <= 3
                and _MODIFIER_BETWEEN.fullmatch(text[m.end:start])] for start, _, _ in spans]   # 两个足球, 一顶双人帐篷
    afters = [[m for m in mentions if 0 <= m.start - end <= 1] for _, end, _ in spans]     # 水壶2个
    counts_follow = bool(spans) and bool(afters[0]) and not befores[0]
    for k, (_, _, pid) in enumerate(spans):
        if each:
            per[pid] = _whole(parse_number(each.group("n"))) or 1
            if _counted_in_pairs(each.group(0)):
                paired.add(pid)
            continue
        chosen = (afters[k] or befores[k]) if counts_follow else (befores[k] or afters[k])
        if chosen:
            per[pid] = _whole(chosen[0].value) or 1
            if _counted_in_pairs(chosen[0].text):
                paired.add(pid)
    overall = _whole(mentions[0].value) if mentions else None
    overall_paired = bool(mentions) and _counted_in_pairs(mentions[0].text)
    # 也带一双，两双多少: a larger count priced after the first is the whole (一个多少钱 after 两个 asks a unit's price)
    priced = [m for m in mentions[1:] if re.match(r"\s*多少", text[m.end:])
              and overall is not None and (_whole(m.value) or 0) > overall]
    totalled = [m for m in mentions if _TOTALLED.match(text, m.end)] or priced
    if totalled and len({pid for _, _, pid in spans}) <= 1:   # 各买一双，两双一共多少: the count totalled is the count
        overall = _whole(totalled[0].value)
        per = {pid: overall for pid in per} if overall else per
    groups = _people_each(text)
    if len(groups) >= 2 and spans:   # 我和儿子各一条泳裤，三个人各一顶泳帽: each group's count, of the goods after it
        for start, _, pid in spans:
            group = next((g for g in reversed(groups) if g.start() <= start), None)
            if group is not None and (count := _group_count(group)):
                per[pid] = count
        overall = next(iter(per.values()), overall)
    elif groups:   # 5个人 每人一副 / 40个小朋友每人买一根: people × each one's count
        heads, each_one = _group_parts(groups[0])
        if heads and each_one and len({pid for _, _, pid in spans}) <= 1:
            overall = heads * each_one
            per = {pid: overall for pid in per} if per else per
        elif heads and each_one:   # 30个人，每人一件T恤一条短裤: each product's count, for each of them
            per = {pid: heads * per.get(pid, 1) for _, _, pid in spans}
    if overall is None:
        m = re.search(f"买\\s*(?P<n>{NUM})", text)
        overall = _whole(parse_number(m.group("n"))) if m else None
    return per, overall, frozenset(paired), overall_paired


# A count of people (5个人, 40个小朋友, 三位队员, 班上20个), then what each of them gets (每人一副, 一人一双), or two
# people joined (我和我弟各要一双, 我跟老公一人一双)
_HEADS = f"(?P<n>{NUM})\\s*[个位名]?(?:人|小朋友|小孩|孩子|学生|同学|队员|球员|朋友|会员|老师|教练|守门员|门将|队友|同事|员工|家长|老人|成员|选手)"
_GETS = f"(?:买|要|来|发|配|拿)?\\s*(?P<k>{NUM})?\\s*{MEASURE}"
_EACH_PERSON = "每人|每个人|每位|一人|人手"
_PEOPLE_EACH = re.compile(f"(?:{_HEADS}|"
                          f"(?P<two>[我咱你他她](?:和|跟|与)[^，,。？?！!各每一]{{1,4}}?))[^。？?！!]{{0,8}}?"
                          f"(?:{_EACH_PERSON}|各){_GETS}")
# …or what each gets, then how many people (那每人一对 12个人一共多少钱)
_EACH_PEOPLE = re.compile(f"(?:{_EACH_PERSON}){_GETS}[\\s，,]*{_HEADS}")
_HEADS_TOLD = re.compile(_HEADS)
_EACH_ALONE = re.compile(f"(?:{_EACH_PERSON}){_GETS}")   # (各 alone shares among goods: 各一个)


def _people_each(text: str) -> list[re.Match[str]]:
    """Every count of people with what each of them gets, in either order, as written."""
    return sorted([*_PEOPLE_EACH.finditer(text), *_EACH_PEOPLE.finditer(text)], key=lambda m: m.start())


def _group_parts(group: re.Match[str]) -> tuple[int | None, int | None]:
    """(how many people, what each of them gets) of one _people_each match."""
    each_one = _whole(parse_number(group.group("k"))) if group.group("k") else 1
    people = 2 if group.groupdict().get("two") else _whole(parse_number(group.group("n")))
    return people, each_one


def _group_count(group: re.Match[str]) -> int | None:
    """People × what each of them gets, of one _people_each match."""
    people, each_one = _group_parts(group)
    return people * each_one if people and each_one else None


def heads(text: str) -> int | None:
    """How many people a message says the goods are for (班上20个小孩, 我们足球队11个人), or None."""
    told = _HEADS_TOLD.search(text)
    return _whole(parse_number(told.group("n"))) if told else None


def each_gets(text: str) -> int | None:
    """What each person gets when the message gives it and not how many people there are (再每人配个水壶, 再每人一条
    运动短裤: the people told before), or None."""
    if heads(text) is not None or (each := _EACH_ALONE.search(text)) is None:
        return None
    return _whole(parse_number(each.group("k"))) if each.group("k") else 1


def for_each_person(text: str) -> bool:
    """Whether the message gives goods to each of some people (5个人 每人一副, 我和我弟各要一双): 各 then shares
    among people, not among goods."""
    return bool(_people_each(text))


def _counted_in_pairs(count: str) -> bool:
    return count.rstrip().endswith(("对", "双"))


# between a bound and the words that rule it out (两百以上的就算了, 五十以下的我不要)
_BEFORE_MARKER = re.compile(r"的?(?:[那这](?:种|些|个|样的?)|话|我|就|都|也|咱|那)*")


def _ruled_after(text: str, end: int) -> bool:
    """Whether the bound that ends at `end` is ruled out (两百以上的就算了 太贵): the budget is its other side."""
    return marker_at(text, _BEFORE_MARKER.match(text, end).end())


def budget(text: str) -> tuple[Decimal | None, Decimal | None]:
    if (m := _RANGE.search(text)) and (lo := parse_number(m.group("lo"))) is not None \
            and (hi := parse_number(m.group("hi"))) is not None and lo < hi:
        return hi, lo   # 600到780之间
    low = high = None
    for pattern, kind in _BUDGET:
        m = pattern.search(text)
        if not m or (value := parse_number(m.group("n"))) is None:
            continue
        if kind == "around":   # 两百左右: within a fifth either way
            return (value * Decimal("1.2")).quantize(Decimal(1)), (value * Decimal("0.8")).quantize(Decimal(1))
        if kind == "above":    # 一百出头: from it to a third more
            return (value * Decimal("1.35")).quantize(Decimal(1)), value
        if kind in ("max", "min") and _ruled_after(text, m.end()):
            kind = "min" if kind == "max" else "max"   # 两百以上的就算了: at most two hundred
        if kind == "max" and high is None:
            high = value
        elif kind == "min" and low is None:
            low = value
    return high, low
