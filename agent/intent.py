"""What a customer's message asks for, read deterministically: quantity, first purchase, and the kind
of question. Used by the backend (to prepare a calculation) and by the offline model."""

from __future__ import annotations

import re

from guardrails.figures import QUANTITY, find_mentions, parse_number

FIRST_PURCHASE = re.compile(r"首次|第一次|首单|新客|新用户|头一次|第一单")
MODIFY = re.compile(r"(改|修改|调整|设置|设为|调成|改成|降到|降为|删除|删掉|清空|上架|下架).{0,12}"
                    r"(价|价格|库存|优惠|活动|折扣|商品)|(价格|库存|优惠|活动).{0,8}(改|修改|调整|设为|改成|调成|删除)")
GREETING = re.compile(r"^\s*(你好|您好|在吗|在么|hi|hello|嗨|哈喽|早上好|晚上好|下午好|谢谢|感谢|好的|ok|再见|拜拜)"
                      r"[呀啊哦呢吗！!。.~，,\s]*$", re.I)
THANKS = re.compile(r"谢谢|感谢|好的|ok|再见|拜拜", re.I)
POLICY = re.compile(r"退货|退款|换货|退换|发货|快递|配送|物流时效|几天到|多久到|发票|质保|保修|售后|支付|付款|"
                    r"微信支付|支付宝|货到付款|客服|人工|营业时间|尺码|尺寸建议|选码|大半码")
ORDER = re.compile(r"订单|我的单|我买的|下的单|到哪了|发货了吗|物流|单号")
PRICE = re.compile(r"多少钱|价格|价钱|售价|几块|多少元|贵|便宜|总价|一共|合计|怎么卖|报价|元吗|块吗")
PROMOTION = re.compile(r"优惠|活动|打折|折扣|促销|满减|赠|送|包邮|划算|便宜点")
STOCK = re.compile(r"库存|有货|现货|还有吗|有没有货|缺货|卖完")
# Words that ask about something already being discussed, without naming it.
_FOLLOW_UP_NOISE = re.compile(
    r"那|呢|吗|么|吧|啊|呀|的|了|我|你|请问|如果|要是|再|还|也|就|都|买|要|想|个|件|支|双|只|张|盒|套|条|瓶|"
    r"多少钱|多少|价格|价钱|售价|怎么卖|总共|一共|合计|优惠|活动|打折|折扣|促销|有|没有|库存|有货|现货|"
    r"首次|第一次|首单|购买|下单|这个|那个|它|这款|那款|贵|便宜|划算|送|赠|包邮|能|可以|吗|？|\?|，|,|。|！|!|\s|"
    r"[0-9零一二两三四五六七八九十百]+")


def requested_quantity(text: str) -> int | None:
    """The number of units the customer asks about ('买两个' → 2, '3双' → 3), if any."""
    for mention in find_mentions(text):
        if mention.kind == QUANTITY and mention.value is not None and mention.value == int(mention.value) \
                and 1 <= mention.value <= 9999:
            return int(mention.value)
    m = re.search(r"买\s*([0-9]+|[一二两三四五六七八九十]+)", text)
    if m:
        value = parse_number(m.group(1))
        if value is not None and value == int(value) and 1 <= value <= 9999:
            return int(value)
    return None


def is_first_purchase(text: str) -> bool:
    return bool(FIRST_PURCHASE.search(text))


def is_follow_up(text: str) -> bool:
    """True when nothing is left once question words are removed: '那买两个呢', '有优惠吗'."""
    return len(_FOLLOW_UP_NOISE.sub("", text)) == 0


def is_description(text: str) -> bool:
    """True when the customer describes a need in a sentence rather than naming a product."""
    return len(_FOLLOW_UP_NOISE.sub("", text)) >= 6
