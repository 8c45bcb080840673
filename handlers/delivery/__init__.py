"""Delivery: every update answered exactly once and in order per chat. The durable inbox (Redis
Streams) and its workers, the per-chat guards (sequencer, locks, duplicates, rate limits), the
polling, webhook, receiver and worker runners, and the metrics they export. The channels plug in
here as an aiogram dispatcher; nothing here knows what a reply says."""
