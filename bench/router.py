"""Router benchmark: what reading "what a message asks" costs per message, beside the embedding the
product search computes anyway (the router reuses that vector), on the frozen test split's messages.

    python bench/router.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.intent import read  # noqa: E402
from agent.routing import Router  # noqa: E402
from retrieval.embedders import LocalE5Embedder  # noqa: E402


def per_message_ms(fn, texts, rounds):
    samples = []
    for _ in range(rounds):
        for text in texts:
            started = time.perf_counter()
            fn(text)
            samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), statistics.quantiles(samples, n=100)[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    lines = (ROOT / "agent" / "evalsets" / "routing-test.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in lines if line.strip()]
    started = time.perf_counter()
    router = Router.load()
    load_ms = (time.perf_counter() - started) * 1000
    embedder = LocalE5Embedder()
    embedder.encode(["预热"], True)
    vectors = {t: embedder.encode([t], True)[0] for t in texts}
    embed = per_message_ms(lambda t: embedder.encode([t], True), texts[:100], 1)
    full = per_message_ms(lambda t: router.labels(t, vectors[t]), texts, args.rounds)
    ngrams = per_message_ms(lambda t: router.labels(t, None), texts, args.rounds)
    reader = per_message_ms(lambda t: read(t), texts, args.rounds)
    print(f"{len(texts)} messages, {args.rounds} rounds; router weights loaded in {load_ms:.1f} ms")
    print(f"{'step':34s} {'p50 ms':>8s} {'p99 ms':>8s} {'p50 / embedding':>16s}")
    for name, (p50, p99) in (("embedding (shared with the search)", embed), ("router, vector + n-grams", full),
                             ("router, n-grams only", ngrams), ("rest of the reader (jieba, rules)", reader)):
        print(f"{name:34s} {p50:8.3f} {p99:8.3f} {p50 / embed[0]:16.3f}")


if __name__ == "__main__":
    main()
