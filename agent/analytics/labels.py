"""What an operator reads for the audit's machine words: turn statuses, the validators' reason codes (the
code kept beside its one-line explanation, so it can still be searched), the misunderstanding flags. One
table for /stats, `bot.py stats`, `audit tail` and the web console; nothing English reaches their screens."""

from __future__ import annotations

from decimal import Decimal

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


# a verified figure's role, as the audit console shows it
ROLE_LABELS = {
    "price": "单价", "subtotal": "小计", "total": "合计", "saving": "优惠金额", "spend threshold": "满额门槛",
    "reduction": "减免", "rate": "折扣", "minimum quantity": "起购数量", "paid units": "付费件数",
    "free units": "赠送件数", "units received": "实得件数", "stock": "库存", "order total": "订单金额",
    "order quantity": "订单件数", "text": "原文数字", "customer's budget": "顾客预算", "units wanted": "想要件数",
    "amount short of a threshold": "距门槛还差", "units short of a threshold": "还需件数", "difference": "差额",
    "amount dearer": "贵出", "amount cheaper": "便宜", "number of orders": "订单数", "average per order": "平均每单",
    "largest order": "最高一单", "smallest order": "最低一单", "units sold": "售出件数", "share of the whole": "占比",
}
_SOURCE_WORDS = {"product": "商品", "promotion": "促销", "order": "订单", "doc": "文档", "document": "文档"}


def _plain(value: Decimal) -> str:
    text = format(value.normalize(), "f") if value == value.to_integral_value() else format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _hours(hours: Decimal) -> str:
    if hours and hours % 720 == 0:
        return f"{_plain(hours / 720)}个月"
    if hours >= 72 and hours % 24 == 0:
        return f"{_plain(hours / 24)}天"
    if hours < 1:
        return f"{_plain(hours * 60)}分钟"
    return f"{_plain(hours)}小时"


def figure_value(role: str, kind: str, value: Decimal) -> str:
    """A figure as people read it: ¥699.00, 9折, 28.4%, 09:00, 48小时, 3个月, 50件."""
    if kind == "money":
        return f"¥{value:.2f}"
    if kind == "clock":
        minutes = int(value)
        return f"{minutes // 60:02d}:{minutes % 60:02d}"
    if kind == "duration":
        return _hours(value)
    if role == "share of the whole":
        return f"{_plain(value)}%"
    if kind == "discount":
        return f"{_plain(value * 10)}折" if value < 1 else f"{_plain(value)}%"
    if kind == "stock":
        return f"{_plain(value)}件"
    if role == "number of orders":
        return f"{_plain(value)}单"
    return _plain(value)


def figure_text(role: str, kind: str, value: Decimal, source: str = "") -> str:
    """"单价 ¥120.00（商品 001）": one verified figure of the audit's evidence."""
    where = ""
    if source:
        head, _, rest = source.partition(" ")
        where = f"（{_SOURCE_WORDS[head]} {rest}）" if head in _SOURCE_WORDS and rest else f"（{source}）"
    return f"{ROLE_LABELS.get(role, role)} {figure_value(role, kind, value)}{where}"


KIND_LABELS = {"turn": "对话", "handoff_start": "转人工", "handoff_claim": "客服接手", "handoff_end": "人工结束",
               "relay": "转发", "feedback": "反馈", "unanswered": "未回复"}
# what the console marks on a record (TurnRecord.marks)
MARK_LABELS = {"degraded": "降级", "fallback": "兜底", "blocked": "有拦截", "not sent": "未发送"}


def kind_label(kind: str | None) -> str:
    return KIND_LABELS.get(kind or "", kind or "")


def mark_label(mark: str) -> str:
    return MARK_LABELS.get(mark, mark)


# why a turn fell back from the remote model to the offline one: the model's own words (English, from the
# SDK or the loop) kept after the explanation, as the reason codes keep theirs
_DEGRADED = (("turn budget spent", "本轮时限用尽"), ("timed out", "模型接口超时"), ("circuit open", "模型接口多次失败，暂时跳过"),
             ("answered HTTP", "模型接口返回错误"), ("failed", "模型接口调用失败"), ("no choices", "模型没有返回内容"),
             ("without submit_answer", "模型一直没有提交答案"), ("rejected", "模型的答案多次未通过核实"),
             ("model calls", "模型调用次数用尽仍无可发送的答案"))


def degraded_reason(text: str | None) -> str:
    """Why the remote model was left for the offline one, as an operator reads it (the original kept)."""
    if not text:
        return ""
    said = next((label for needle, label in _DEGRADED if needle in text), "模型没有给出可发送的答案")
    return f"{said}（{text}）"
