"""The demo catalog as tests and benchmarks see it: built as if today were DEMO_DAY (KEFU_TODAY)."""

from datetime import date

DEMO_DAY = date(2026, 11, 29)
