"""What a `python bot.py` process does about itself, apart from its work: a Telegram mode runs on uvloop's
event loop, its log lines leave the event loop, what start-up loaded stays out of the garbage collector's
scans, and a clean stop skips the interpreter's teardown.

The teardown: freeing what aiogram (~450 pydantic models), jieba and pypinyin (dictionaries of hundreds of
thousands of entries) built costs a bot process 0.5–1 CPU second at every stop — a restart, a rolling
deploy, each real-process test — and achieves nothing: the operating system takes the memory back at once.
By the time `main()` returns, every store was closed in order (one AsyncExitStack), the audit queue written
and the log listener stopped; what remains is done in `leave` in the interpreter's own order, then the
process ends."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import logging
import logging.handlers
import os
import queue
import sys
import threading
from collections.abc import Coroutine
from typing import Any, NoReturn


def run_serving(main: Coroutine[Any, Any, int]) -> int:
    """`asyncio.run(main)` on uvloop's event loop (libuv) where it is installed — every platform but Windows:
    a bot that serves hundreds of chats spends much of its time in the loop's socket and callback handling,
    which uvloop does in C."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def log_off_the_loop(level: int) -> logging.handlers.QueueListener:
    """Log lines are queued and written to stderr by a thread of their own: a slow reader of the log
    (a full pipe, a busy log driver) never stalls the event loop. aiogram's line per update is left out
    (the audit log has one per turn)."""
    lines: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    writer = logging.StreamHandler()
    writer.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.setLevel(level)
    root.addHandler(logging.handlers.QueueHandler(lines))
    logging.getLogger("aiogram.event").setLevel(max(level, logging.WARNING))
    listener = logging.handlers.QueueListener(lines, writer)
    listener.start()
    return listener


def settle_heap() -> None:
    """Once start-up has loaded what lives as long as the process (the catalog's search structures, jieba's
    and pypinyin's dictionaries, the models: ~350,000 objects), move it out of the collector's reach. A full
    collection walked all of it every few hundred turns under load: a pause of ~190 ms for every chat in
    flight (measured with gc.callbacks); now it walks what the turns made."""
    gc.collect()
    gc.freeze()


def leave(code: int) -> NoReturn:
    """Exit with `code`. A failure (non-zero) leaves through the ordinary teardown, which reports objects
    left open (an unclosed session, a coroutine never awaited) beside the error; a clean stop collects
    garbage first (the same reports for anything unreachable), runs the atexit handlers, waits for the
    threads that are not daemons (as the interpreter does), flushes the standard streams, then ends."""
    if code != 0:
        sys.exit(code)
    gc.collect()
    atexit._run_exitfuncs()
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)
