"""The channels customers reach the agent through: Telegram (aiogram) and the console chat."""
