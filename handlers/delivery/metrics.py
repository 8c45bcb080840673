"""Prometheus metrics of the bot process, served at /metrics on the health port (WEBHOOK_PORT).
Counters and histograms live in prometheus-client's default registry (one per process)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from redis.asyncio.connection import Connection

from agent.audit import writer_counts, writer_problems
from agent.breaker import circuits

SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40)

UPDATES = Counter("kefu_updates_total", "Telegram updates received (before duplicates are dropped)")
DUPLICATES = Counter("kefu_duplicate_updates_total", "Updates dropped as already seen")
TURNS = Counter("kefu_turns_total", "Customer turns answered, by status", ["status"])
BLOCKS = Counter("kefu_validator_blocks_total", "Drafts blocked by the validator, by reason code", ["code"])
DEGRADED = Counter("kefu_degraded_turns_total", "Turns the remote model could not finish (offline model answered)")
FALLBACK = Counter("kefu_fallback_turns_total", "Turns that ended with the safe fallback text")
TURN_PLACES = Counter("kefu_turn_process_turns_total", "Customer turns by where they ran: the turn process "
                      "(child) or, while it is starting or gone, the bot process itself (here)", ["where"])
NOT_SENT = Counter("kefu_turns_not_sent_total", "Answers not sent because a person took the chat meanwhile")
MODEL_CALLS = Histogram("kefu_model_calls_per_turn", "Model calls in one turn", buckets=(1, 2, 3, 4, 5, 6, 8, 12))
HANDOFFS = Counter("kefu_handoffs_total", "Chats handed to a person")
FEEDBACK = Counter("kefu_feedback_total", "👍/👎 presses recorded", ["value"])
INBOX_PENDING = Gauge("kefu_inbox_pending", "Inbox entries read and not yet acknowledged, per partition",
                      ["partition"])
INBOX_LAG = Gauge("kefu_inbox_lag", "Inbox entries not yet read by any worker, per partition", ["partition"])
REDIS_ROUND_TRIPS = Counter("kefu_redis_round_trips_total", "Requests written to Redis (a pipeline or a "
                            "transaction is one)")
REPLICA_WAITS = Counter("kefu_redis_replica_waits_total", "WAITs for a replica after an inbox append, read or "
                        "acknowledgement (REDIS_WAIT_REPLICAS), by outcome", ["outcome"])
STAGE = Histogram("kefu_stage_seconds", "Time per stage of a customer message", ["stage"], buckets=SECONDS)
# stages: inbox (appended → taken by a worker), queue (waiting for the chat's earlier messages), retrieval
# (the tools: search and SQL, summed), model (waiting for the model, summed), validation (summed), turn
# (the whole turn), send (the reply to Telegram)


class CircuitCollector(Collector):
    """The remote endpoints' circuit breakers (agent/breaker.py), read at each scrape."""

    def collect(self):
        state = GaugeMetricFamily("kefu_circuit_state", "Circuit breaker of a remote endpoint: 0 closed, "
                                  "1 half-open (one probe call), 2 open (calls skipped)", labels=["endpoint"])
        opened = CounterMetricFamily("kefu_circuit_opened", "Times the circuit opened (a failed probe re-opens it)",
                                     labels=["endpoint"])
        skipped = CounterMetricFamily("kefu_circuit_skipped_calls", "Calls skipped while the circuit was open",
                                      labels=["endpoint"])
        for circuit in circuits():
            state.add_metric([circuit.endpoint], int(circuit.state))
            opened.add_metric([circuit.endpoint], circuit.opened_total)
            skipped.add_metric([circuit.endpoint], circuit.skipped_total)
        yield from (state, opened, skipped)


REGISTRY.register(CircuitCollector())


class AuditWriterCollector(Collector):
    """The audit writer of this process (db/audit_store.py), read at each scrape: alert on `up` 0."""

    def collect(self):
        up = GaugeMetricFamily("kefu_audit_writer_up", "1 while the audit writer runs, 0 when it is dead or stuck "
                               "(records are then not kept; /healthz is 503)")
        up.add_metric([], 0 if writer_problems() else 1)
        records = CounterMetricFamily("kefu_audit_records", "Audit records by outcome: written, skipped (a record "
                                      "the store could not write, logged with its ids), dropped (queue full or "
                                      "left at close)", labels=["outcome"])
        for outcome, count in writer_counts().items():
            records.add_metric([outcome], count)
        yield from (up, records)


REGISTRY.register(AuditWriterCollector())


class CountingConnection(Connection):
    """A Redis connection that counts its round trips: every write of one command or one pipeline."""

    async def send_packed_command(self, command, check_health: bool = True) -> None:
        REDIS_ROUND_TRIPS.inc()
        await super().send_packed_command(command, check_health)


def observe_turn(result: Any, delivered: bool) -> None:
    """Count one finished turn from its result and trace."""
    TURNS.labels(status=str(result.status)).inc()
    trace = result.trace
    if not delivered:
        NOT_SENT.inc()
    if trace is None:
        return
    for verdict in trace.verdicts:
        if not verdict.ok:
            for code in verdict.codes:
                BLOCKS.labels(code=code).inc()
    if trace.degraded:
        DEGRADED.inc()
    if trace.fallback:
        FALLBACK.inc()
    MODEL_CALLS.observe(trace.model_calls)
    STAGE.labels(stage="turn").observe(trace.latency_ms / 1000)
    STAGE.labels(stage="retrieval").observe(sum(t.duration_ms for t in trace.tool_calls) / 1000)
    STAGE.labels(stage="model").observe(trace.model_ms / 1000)
    STAGE.labels(stage="validation").observe(trace.validation_ms / 1000)


async def metrics_endpoint(request: web.Request) -> web.Response:
    response = web.Response(body=generate_latest())
    response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    response.charset = "utf-8"
    return response
