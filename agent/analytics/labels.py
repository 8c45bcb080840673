"""What an operator reads for the audit's machine words: turn statuses, the validators' reason codes (the
code kept beside its one-line explanation, so it can still be searched), the misunderstanding flags. One
table for /stats, `bot.py stats`, `audit tail` and the web console; nothing English reaches their screens."""

from __future__ import annotations

STATUS_LABELS = {
    "grounded": "已核实",
    "insufficient_evidence": "证据不足",
    "fallback": "兜底回复",
    "handoff": "已转人工",
}

# reason code → what it means, in one line
REASONS = {
    "UNVERIFIED_AMOUNT": "金额不在已核实的数据中",
    "UNVERIFIED_QUANTITY": "数量不在已核实的数据中",
    "UNVERIFIED_STOCK": "库存数字或状态未核实",
    "UNVERIFIED_DISCOUNT": "折扣未核实",
    "UNVERIFIED_PRODUCT_ID": "引用的商品编号未核实",
    "UNVERIFIED_BRAND": "品牌未核实",
    "UNVERIFIED_GIFT": "赠品未核实",
    "UNVERIFIED_SHIPPING": "包邮等运费说法未核实",
    "UNVERIFIED_POLICY_FIGURE": "政策中的数字（天数、时间等）与店铺规定不符",
    "UNVERIFIED_DATE": "日期与统计所用的时间范围不符",
    "WRONG_ROLE": "数字是真的，但用错了含义（如把下单额说成销售额、把均价说成总额）",
    "MISSING_CONDITION": "优惠的前提条件没有说明",
    "CONFIRMS_CUSTOMER_CLAIM": "附和了顾客说错的事实（如错误的价格）",
    "FACTS_WITHOUT_EVIDENCE": "说了事实却没有引用任何证据",
    "NEEDS_PRODUCT_EVIDENCE": "提到商品但没有引用该商品的资料",
    "NEEDS_AGGREGATE": "统计答案没有引用订单统计结果",
    "NO_CITATION": "没有引用证据",
    "UNKNOWN_CITATION": "引用了本轮没有的证据编号",
    "POLICY_CONTRADICTS": "与店铺政策原文矛盾",
    "PRICE_STATUS_CONTRADICTS": "商品没有标价，却给出了价格",
    "STOCK_STATUS_CONTRADICTS": "有货/缺货的说法与库存不符",
    "SCOPE_UNSTATED": "统计答案没有写明统计的订单状态或时间范围",
    "EMPTY_ANSWER": "答案为空",
    "BAD_STATUS": "答案状态不正确",
    "NOT_GROUNDED": "统计答案未标记为已核实",
    "NO_SUBMISSION": "模型没有提交答案",
    "PERIOD_MISMATCH": "查询的时间范围与问题不符",
    "UNKNOWN_EVIDENCE": "作图引用的统计结果不存在",
    "QUERY_FAILED": "订单查询失败",
    "UNKNOWN_TOOL": "调用了不存在的工具",
    "INVALID_ARGUMENTS": "工具参数不合法",
    "MALFORMED_JSON": "工具参数不是合法的 JSON",
}

FLAG_LABELS = {
    "not_found_but_confident": "答“没有”但检索有把握",
    "fallback": "兜底回复",
    "rephrased": "顾客换了说法重问",
    "negative_reply": "顾客说不对/听不懂",
    "thumbs_down": "顾客点了👎",
    "human_after_answer": "回答后顾客要求转人工",
}


def status_label(status: str | None) -> str:
    if not status:
        return "—"
    return STATUS_LABELS.get(status, status)


def reason(code: str) -> str:
    """"金额不在已核实的数据中（UNVERIFIED_AMOUNT）": the explanation first, the code beside it."""
    text = REASONS.get(code)
    return f"{text}（{code}）" if text else f"其他原因（{code}）"


def flag_label(flag: str) -> str:
    return FLAG_LABELS.get(flag, flag)
