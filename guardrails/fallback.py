"""What a customer reads when no answer could be verified: polite, honest, and free of facts."""

SAFE_FALLBACK = (
    "抱歉，这个问题我暂时无法给出经过核实的准确答复。为避免给您错误的信息，"
    "请换个方式描述您的问题，或稍后联系人工客服，我们会尽快为您确认。"
)

NOT_UNDERSTOOD = "抱歉，我没有理解您的问题。您可以问我商品的价格、库存、优惠活动或订单情况，例如：足球多少钱？"
