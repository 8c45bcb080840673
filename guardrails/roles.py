"""What a figure means: its role (a price, a total, a spend threshold…), read from the shop's own phrasing.

The ledger files every verified figure under a role; the validator reads the role a sentence gives a
figure from the words right before (or after) it, and checks the figure against evidence of that role."""

from __future__ import annotations

import re
from enum import StrEnum


class Kind(StrEnum):
    """What kind of quantity a figure is, whatever its role."""

    MONEY = "money"
    DISCOUNT = "discount"
    STOCK = "stock"
    QUANTITY = "quantity"
    DURATION = "duration"   # normalized to hours: 7天 → 168
    CLOCK = "clock"         # a time of day, in minutes after midnight: 21:00 → 1260


class Role(StrEnum):
    PRICE = "price"                        # the unit price of a product
    SUBTOTAL = "subtotal"                  # unit price × quantity, before promotions
    TOTAL = "total"                        # the final amount for a quantity, after promotions
    SAVING = "saving"                      # what the promotions took off a calculated total
    THRESHOLD = "spend threshold"          # 满X
    REDUCTION = "reduction"                # 减Y
    RATE = "rate"                          # N折 / 半价 / N%
    MIN_QUANTITY = "minimum quantity"      # N支及以上
    PAID_UNITS = "paid units"              # 买X(送Y)
    FREE_UNITS = "free units"              # (买X)送Y, 另送N个
    TOTAL_UNITS = "units received"         # 实得N个
    STOCK = "stock"
    ORDER_TOTAL = "order total"
    ORDER_QUANTITY = "order quantity"
    TEXT = "text"                          # a figure written in a product's or a document's own text
    BUDGET = "customer's budget"           # 100元以内: the customer's own limit, restated
    # figures of the promotion plans (db/promotion_plans.py): receive N, reach a threshold, compare two amounts
    WANTED_UNITS = "units wanted"          # 想要N个: what the customer wants to receive
    SHORTFALL = "amount short of a threshold"   # 还差N元 (from a stated quantity)
    UNITS_SHORT = "units short of a threshold"  # 再买N个 / 还差N个 (from a stated quantity)
    DIFFERENCE = "difference"              # 相差N元 / 差价N元: between two verified amounts, either way
    DEARER_BY = "amount dearer"            # A比B贵N元: A is the larger amount
    CHEAPER_BY = "amount cheaper"          # A比B便宜N元: A is the smaller amount
    # figures of an aggregate over orders (ORDER_TOTAL is their sum)
    ORDER_COUNT = "number of orders"
    AVERAGE = "average per order"
    LARGEST = "largest order"
    SMALLEST = "smallest order"
    UNITS_SOLD = "units sold"
    SHARE = "share of the whole"
    PER_UNIT = "paid per unit"             # 平均每支240元: a calculation's total over the units received


KIND_OF = {
    Role.PRICE: Kind.MONEY, Role.SUBTOTAL: Kind.MONEY, Role.TOTAL: Kind.MONEY, Role.SAVING: Kind.MONEY,
    Role.THRESHOLD: Kind.MONEY, Role.REDUCTION: Kind.MONEY, Role.ORDER_TOTAL: Kind.MONEY, Role.RATE: Kind.DISCOUNT,
    Role.MIN_QUANTITY: Kind.QUANTITY, Role.PAID_UNITS: Kind.QUANTITY, Role.FREE_UNITS: Kind.QUANTITY,
    Role.TOTAL_UNITS: Kind.QUANTITY, Role.ORDER_QUANTITY: Kind.QUANTITY, Role.STOCK: Kind.STOCK,
    Role.ORDER_COUNT: Kind.QUANTITY, Role.AVERAGE: Kind.MONEY, Role.LARGEST: Kind.MONEY, Role.SMALLEST: Kind.MONEY,
    Role.UNITS_SOLD: Kind.QUANTITY, Role.SHARE: Kind.DISCOUNT,
    Role.WANTED_UNITS: Kind.QUANTITY, Role.SHORTFALL: Kind.MONEY, Role.UNITS_SHORT: Kind.QUANTITY,
    Role.DIFFERENCE: Kind.MONEY, Role.DEARER_BY: Kind.MONEY, Role.CHEAPER_BY: Kind.MONEY, Role.PER_UNIT: Kind.MONEY,
}

# The measure words of the shop's goods, the one table (个 not before 月; 包 not in 包邮).
MEASURE = "(?:个(?!月)|件|支|双|只|张|瓶|盒|套|条|副|根|把|台|罐|筒|对|片|包(?!邮)|组|箱|桶|本|顶(?![级尖部端]))"

# Words right before a money figure, the closest one decides ("买一个共108元": 共, not 一个); on a tie the
# earlier row wins (原价共 is a subtotal, not 共's total; 相差 a difference, not 差's shortfall). The
# comparison and shortfall words count only right before the figure (贵199元, not 贵的那个699元).
MONEY_BEFORE: tuple[tuple[Role, re.Pattern[str]], ...] = (
    (Role.SUBTOTAL, re.compile("小计|原价(?:合计|共计|一共|总共|总计|共)|(?:折前|优惠前)(?:价格?)?(?:合计|共计|一共|总共|总计|共)|"
                               "商品金额")),
    (Role.DIFFERENCE, re.compile("(?:相差|差价|价差|差额)了?(?:是|为)?\\s*$")),
    (Role.CHEAPER_BY, re.compile("比(?!原价|标价|定价|原来|平时|单买)[^，,。；;比]{1,20}?便宜了?\\s*$")),   # 比原价便宜: a saving
    (Role.DEARER_BY, re.compile("(?<![最较])贵(?:出)?了?\\s*$")),
    (Role.SHORTFALL, re.compile("差了?\\s*$|再凑\\s*$")),
    (Role.TOTAL, re.compile("一共|合计|总价|总共|共计|总计|共|实付款?|到手价?|折后价?|优惠后|打折后|活动价|优惠价|"
                            "现价|只要|只需|仅需|需付|应付|支付|付款|后")),
    (Role.REDUCTION, re.compile("立减|直降|减|优惠了?|便宜了?|节省|省了?|少付|抵扣|抵")),
    (Role.PER_UNIT, re.compile(f"平均(?:下来)?(?:每|一)?{MEASURE}?|折合(?:每|一)?{MEASURE}?|摊下来(?:每|一)?{MEASURE}?")),
    (Role.PRICE, re.compile(f"售价|价格|单价|原价|折前价?|优惠前|标价|定价|零售价|价钱|每{MEASURE}|一{MEASURE}|"
                            f"单{MEASURE}")),
)
# Words right after a money figure: "120元一个", "200元以上包邮".
MONEY_AFTER: tuple[tuple[Role, re.Pattern[str]], ...] = (
    (Role.BUDGET, re.compile("^\\s*(?:以内|以下|之内|左右)")),
    (Role.PRICE, re.compile(f"^\\s*(?:/|每|一){MEASURE}")),
    (Role.THRESHOLD, re.compile("^\\s*(?:及|或)?以上")),
)
QUANTITY_BEFORE: tuple[tuple[Role, re.Pattern[str]], ...] = (
    (Role.UNITS_SHORT, re.compile("还差|再买|再加购?|再拿|多买")),
    (Role.FREE_UNITS, re.compile("送|赠")),
    (Role.TOTAL_UNITS, re.compile("实得|共得|可得|到手|拿到|总共得")),
    (Role.MIN_QUANTITY, re.compile("满|至少|起码")),
)
QUANTITY_AFTER: tuple[tuple[Role, re.Pattern[str]], ...] = (
    (Role.MIN_QUANTITY, re.compile("^\\s*(?:及|或)?(?:以上|起购|起)")),
)

FIRST_PURCHASE_WORDS = re.compile(r"首次|第一次|首单|新客|新用户|头一次|第一单|首购|新号|新账号|"
                                  r"(?:从来|从|一单都|一次都)?没(?:有)?(?:在(?:你们家|你家|这家|贵店|店里|这里|这儿))?"
                                  r"(?:买过|下过单?|下单过)(?=东西|$|[，,。！!？?\s吗呢])")   # 从没在你们家买过东西


# Bought here before, told (我以前在你们家买过东西, 之前在你们这买过球, 我是老客户): no first purchase, whatever else the
# message says of one (…还有首单8折吗) — a time before, then 买过/下过单 in the same clause with no 没 between
BOUGHT_BEFORE = re.compile(r"(?:以前|之前|上次|上回|前阵子|前段时间|前几天|去年|早就|早先)[^，,。！!？?\s没未]{0,10}?(?:买过|下过单|下单过)"
                           r"|老客户|老顾客|老用户|回头客|不是(?:第一次|头一次|首次|新客|新用户)(?:买|下单|来|了|啦|哈|$|[，,。\s])")


def first_purchase_told(text: str) -> bool:
    """Whether a message speaks of a first purchase as the customer's own: its words, and no purchase here before told."""
    return bool(FIRST_PURCHASE_WORDS.search(text)) and not BOUGHT_BEFORE.search(text)
