"""Ways a shop answer can write an amount or a discount; shared by the validator tests and bench."""

from __future__ import annotations

from decimal import Decimal

import cn2an

FULLWIDTH = str.maketrans("0123456789.", "０１２３４５６７８９．")


def plain(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if "." in text or "E" not in text else str(int(value))


def money_forms(value: Decimal) -> dict[str, str]:
    """Every written form of an amount that must normalize back to `value`."""
    p = plain(value)
    forms = {
        "digits": f"{p}元",
        "cents": f"{value.quantize(Decimal('0.01'))}元",
        "yen": f"¥{p}",
        "fullwidth_yen": f"￥{p}",
        "fullwidth_digits": f"{p.translate(FULLWIDTH)}元",
        "hanzi": f"{cn2an.an2cn(p, 'low')}元",
        "daxie": f"{cn2an.an2cn(p, 'up')}元",
        "kuai": f"{p}块",
        "kuaiqian": f"{p}块钱",
        "rmb_suffix": f"{p} RMB",
        "rmb_prefix": f"RMB {p}",
        "cny": f"CNY{p}",
        "renminbi": f"人民币{p}元",
    }
    if value >= 1000:
        forms["thousands"] = f"{value:,.2f}元"
    if value >= 10000 and (value / 10000) == (value / 10000).quantize(Decimal("0.01")):
        forms["wan"] = f"{plain(value / 10000)}万元"
    if value == value.quantize(Decimal("0.1")) and value != value.to_integral_value() and value < 100:
        whole, tenth = divmod(value, 1)
        forms["kuai_jiao"] = f"{cn2an.an2cn(str(int(whole)), 'low')}块{cn2an.an2cn(str(int(tenth * 10)), 'low')}"
    return forms


def discount_forms(multiplier: Decimal) -> dict[str, str]:
    """Written forms of a price multiplier (0.9 → 9折, 九折, 90%的价格, 优惠10%)."""
    tenths = multiplier * 10
    digits = plain(tenths) if tenths == tenths.to_integral_value() else plain(multiplier * 100)
    forms = {"zhe": f"{digits}折", "hanzi_zhe": f"{''.join('零一二三四五六七八九'[int(c)] for c in digits)}折",
             "percent_of_price": f"{plain(multiplier * 100)}%的价格", "percent_off": f"优惠{plain((1 - multiplier) * 100)}%"}
    if multiplier == Decimal("0.5"):
        forms["banjia"] = "半价"
    return forms
