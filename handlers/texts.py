"""Everything a customer reads that does not come from the agent (Simplified Chinese), in every channel."""

START = ("您好！我是本店的智能客服，所有价格、库存和优惠都来自店铺系统，经过核实后才会告诉您。\n"
         "您可以这样问我：\n{examples}")
HELP = ("我可以帮您查询：商品价格和库存、优惠活动和到手价、您的订单、退换货和配送等店铺政策。\n"
        "直接用中文提问即可，例如“篮球买两个多少钱”。发送 /reset 可以清空对话记忆，重新开始。")
RESET = "好的，之前的对话已清空，我们重新开始。请问想了解什么？"
ONLY_TEXT = "抱歉，我目前只能理解文字消息。请用文字描述您的问题，例如“足球多少钱？”"
TOO_LONG = "抱歉，您的消息太长了，我没法准确理解。请把问题精简到{limit}个字以内再发给我。"
SLOW_DOWN = "您发送得太快了，请稍后再试。我会按顺序回复您之前的问题。"
SORRY = "抱歉，系统暂时出了点问题，没能回答您的问题。请稍后再试，或联系人工客服。"

# --- a person takes over (handoff) ------------------------------------------------------------------
HANDOFF_WAIT = "已为您转接人工客服，客服通常会在几分钟内回复您。在此期间您发送的消息都会直接转给客服。"
HANDOFF_AFTER_HOURS = ("已为您转接人工客服。现在不在人工服务时间（每天{hours}），您的消息已为您保留，"
                       "客服会在{opening}上班后第一时间回复您。")
HANDOFF_ALREADY = "您的消息已转给人工客服，请稍候，客服会尽快回复您。"
HANDOFF_JOINED = "人工客服已接入，接下来由客服为您服务。"
HANDOFF_ENDED = "本次人工服务已结束，感谢您的耐心。接下来由智能客服继续为您服务，有问题随时问我。"
HANDOFF_OFFER = "抱歉，这个问题我暂时没能帮到您。需要为您转接人工客服吗？"
HANDOFF_BUTTON = "转人工"
NO_HANDOFF = "抱歉，目前无法在线为您转接人工客服。"
NO_HANDOFF_POLICY = "抱歉，目前无法在线为您转接人工客服。{policy}"
FEEDBACK_THANKS = "感谢您的反馈！"
FEEDBACK_SORRY = "感谢反馈，抱歉没能帮到您。如需人工客服，请点“转人工”。"
FEEDBACK_ALREADY = "您已经评价过这条回答了，谢谢！"
FEEDBACK_REFUSED = "抱歉，这个评价无法记录：它不对应本对话中的回答。"
UNAVAILABLE = "这个操作已失效。"

# --- what operators read in their group (the shop's staff read Chinese too) ------------------------
CARD_TITLE = "🙋 顾客 {name}（id {user_id}）请求人工服务"
CARD_REASON = {"asked": "顾客主动要求转人工", "misses": "机器人连续两次没能回答", "feedback": "顾客对回答点了 👎"}
CARD_TURNS = "最近对话："
CARD_NO_TURNS = "（还没有对话记录）"
CARD_FOCUS = "正在看的商品：{names}"
CARD_ORDERS = "最近订单："
CARD_NO_ORDERS = "最近订单：无"
CLAIM_BUTTON = "接入"
CLOSE_BUTTON = "结束"
TOPIC_CLAIMED = "✅ 已由客服 {operator} 接入。在本话题中回复即可发给顾客；/close 或“结束”交还机器人。"
TOPIC_CLOSED = "☑️ 会话已结束（{reason}），机器人继续回答这位顾客。"
TOPIC_CLOSED_BY = {"operator": "客服结束", "idle": "{minutes} 分钟无消息，自动结束"}
TOPIC_BLOCKED = "⚠️ 顾客已屏蔽机器人，消息没有送达。"
TOPIC_NOT_DELIVERED = "⚠️ 消息没有送达顾客（Telegram 拒绝：{reason}）。"
