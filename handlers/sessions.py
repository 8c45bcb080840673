"""The chat sessions in Redis (agent/session.py's port): opening reads the handoff state and the memory in
one round trip; the re-check after a turn reads the state and counts the miss in one; the commit writes
the memory, the miss counter and — for an update from the durable inbox — its done-marker and
acknowledgement in one MULTI/EXEC transaction. The chat's keys carry its inbox partition's hash tag, so on a
Redis Cluster all of that is one slot; a receipt from another partition (not a customer's own update) is
settled in a transaction of its own after the chat's. With REDIS_WAIT_REPLICAS a receipt counts as settled
once a replica has it too (a fence and WAIT after the transaction, one more round trip: replicas.py);
a replica that does not confirm raises NotReplicated, and the inbox settles the receipt again."""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis
from redis.crc import key_slot

from agent.handoff import HandoffState, RedisHandoffStore
from agent.memory import ChatMemory
from agent.memory_redis import RedisMemory
from agent.session import Outcome
from handlers.delivery.receipt import Receipt
from handlers.delivery.replicas import ReplicaWait


@dataclass
class RedisSession:
    chat_id: str
    memory: ChatMemory
    handoff: HandoffState
    _sessions: RedisSessions
    _receipt: Receipt | None

    async def recheck(self, helped: bool) -> tuple[HandoffState, int]:
        return await self._sessions.handoffs.after_turn(self.chat_id, helped)

    async def hand_off(self, user_id: str, name: str, now: float) -> bool:
        return await self._sessions.handoffs.begin(self.chat_id, user_id, name, now)

    async def commit(self, outcome: Outcome) -> None:
        owner = self._sessions
        if outcome.turn is None and not outcome.misses_reset and self._receipt is None:
            return   # nothing to write
        apart = self._receipt is not None and \
            key_slot(self._receipt.done_key.encode()) != key_slot(owner.memories.keys.key(self.chat_id, "").encode())
        if outcome.turn is not None or outcome.misses_reset or (self._receipt is not None and not apart):
            async with owner.redis.pipeline(transaction=True) as pipe:
                if outcome.turn is not None:
                    owner.memories.queue_append(pipe, self.chat_id, outcome.turn, outcome.focus_product_ids,
                                                outcome.quantity)
                if outcome.misses_reset:
                    owner.handoffs.queue_misses(pipe, self.chat_id, helped=True)
                if self._receipt is not None and not apart:
                    self._receipt.queue(pipe)
                await pipe.execute()
        if self._receipt is not None and apart:
            async with owner.redis.pipeline(transaction=True) as pipe:
                self._receipt.queue(pipe)
                await pipe.execute()
        if self._receipt is not None:
            if owner.replicas is not None:
                await owner.replicas.after(self._receipt.done_key, self._receipt.fence)
            self._receipt.entry.acked = True


class RedisSessions:
    """Sessions shared by every bot process. `delivery`, when given, is an inbox `Receipt`."""

    def __init__(self, redis: Redis, memories: RedisMemory, handoffs: RedisHandoffStore,
                 replicas: ReplicaWait | None = None):
        self.redis, self.memories, self.handoffs = redis, memories, handoffs
        self.replicas = replicas or ReplicaWait.of(redis)

    async def open(self, chat_id: str, delivery: object | None = None) -> RedisSession:
        if delivery is not None and not isinstance(delivery, Receipt):
            raise TypeError(f"Redis sessions settle inbox receipts, not {type(delivery).__name__}")
        async with self.redis.pipeline(transaction=False) as pipe:
            self.handoffs.queue_get(pipe, chat_id)
            self.memories.queue_load(pipe, chat_id)
            fields, *memory = await pipe.execute()
        return RedisSession(chat_id, self.memories.memory_of(memory), self.handoffs.state_of(fields), self, delivery)

    async def memory(self, chat_id: str) -> ChatMemory:
        return await self.memories.load(chat_id)

    async def reset(self, chat_id: str) -> None:
        await self.memories.reset(chat_id)
