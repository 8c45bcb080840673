"""How `python bot.py` ends once `main()` returned: skip the interpreter's teardown of every module.

Freeing what aiogram (~300 pydantic models), jieba and pypinyin (dictionaries of hundreds of thousands of
entries) built costs a bot process 0.5–1 CPU second at every stop — a restart, a rolling deploy, each
real-process test — and achieves nothing: the operating system takes the memory back at once. By the time
`main()` returns, every store was closed in order (one AsyncExitStack), the audit queue written and the
log listener stopped; what remains is done here in the interpreter's own order, then the process ends."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading
from typing import NoReturn


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
