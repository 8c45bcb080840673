"""Where the inbox's partitions and their chats live in Redis. Each partition has a hash tag (`{p3.17}`):
its stream, the seen- and done-markers of its updates, and the memory, handoff state and miss counter of
every chat it carries share that tag, so a turn's transaction (memory, counter, done-marker, XACK) and
the append script (seen-marker, XADD) each touch one Redis Cluster slot. The tags are chosen so that
partition p sits near the middle of the p-th n-th of the slot space: a cluster created with its slots
split evenly puts the partitions on different masters. On one node a tag is only part of a name."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from agent.memory_redis import ChatKeys


def partition_tags(n: int) -> list[str]:
    """A hash tag per partition, each near the middle of its share of the slots (a slot within a quarter of
    a share from the middle): candidates `p<p>.<k>` are tried in order, a bounded search."""
    share = REDIS_CLUSTER_HASH_SLOTS / n
    tags: list[str | None] = [None] * n
    for p in range(n):
        middle = (p + 0.5) * share
        for k in range(1_000_000):   # about 2·n tries are expected; the bound is never reached for n ≤ 16384
            candidate = f"p{p}.{k}"
            if abs(key_slot(candidate.encode()) - middle) <= share / 4:
                tags[p] = candidate
                break
        else:
            raise RuntimeError(f"no hash tag found for partition {p} of {n}")
    return [t for t in tags if t is not None]


class Partitions:
    """The partitions of the inbox: which one a chat belongs to, and the hash tag of each."""

    def __init__(self, prefix: str = "kefu:", count: int = 4):
        self.prefix, self.count = prefix, count
        self.tags: Sequence[str] = partition_tags(count)

    def of_chat(self, chat: int | str) -> int:
        return zlib.crc32(str(chat).encode()) % self.count

    def tag_of_chat(self, chat_id: str) -> str:
        return self.tags[self.of_chat(chat_id)]

    def chat_keys(self) -> ChatKeys:
        """The chats' key layout for the memory and handoff stores: each chat under its partition's tag."""
        return ChatKeys(self.prefix, self.tag_of_chat, self.tags)
