"""Serving a fake's aiohttp application on 127.0.0.1 at a free port."""

from __future__ import annotations

from aiohttp import web


async def serve(app: web.Application, port: int = 0) -> tuple[web.AppRunner, str]:
    """Start `app` on 127.0.0.1:<port> (0: a free one); returns the runner (to clean up) and the base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"
