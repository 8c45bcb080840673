"""A TCP proxy that can cut the network the way TCP lives through a short outage: while cut it keeps
every connection open and accepts bytes in both directions, but forwards none of them; once healed it
delivers what it held, in order (a half-close included), so a request sent during the cut still reaches
the server and runs there, after its client may have given up. Connections can be healed one by one: a
connection whose retransmissions back off longer gets its bytes through after newer connections."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field


@dataclass(eq=False)
class Link:
    """One proxied connection: its bytes flow while `flowing` is set and wait while it is clear."""
    number: int
    flowing: asyncio.Event = field(default_factory=asyncio.Event)
    marked: bool = False      # it carried the marker of `cut_on` while cut
    tasks: list[asyncio.Task] = field(default_factory=list)
    writers: list[asyncio.StreamWriter] = field(default_factory=list)


class TcpProxy:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port_to = host, port
        self.links: list[Link] = []
        self.cutting = False
        self._marker: bytes | None = None
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def cut(self) -> None:
        """From now on nothing passes, either way, on any connection old or new."""
        self.cutting = True
        for link in self.links:
            link.flowing.clear()

    def cut_on(self, marker: bytes) -> None:
        """Cut as soon as a client sends bytes holding `marker` (a command's name): those bytes are held,
        and every connection that carries the marker until the cut heals is marked (a client's retries)."""
        self._marker = marker

    def heal(self, *, but: tuple[Link, ...] = ()) -> None:
        """Deliver what was held and let bytes flow again, on every connection but those in `but`."""
        self.cutting, self._marker = False, None
        for link in self.links:
            if link not in but:
                link.flowing.set()

    @property
    def marked(self) -> tuple[Link, ...]:
        return tuple(link for link in self.links if link.marked)

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        link = Link(len(self.links))
        if not self.cutting:
            link.flowing.set()
        self.links.append(link)
        try:
            server_reader, server_writer = await asyncio.open_connection(self.host, self.port_to)
        except OSError:
            client_writer.close()
            return
        link.writers += [client_writer, server_writer]
        link.tasks += [asyncio.create_task(self._pump(link, client_reader, server_writer, upstream=True)),
                       asyncio.create_task(self._pump(link, server_reader, client_writer, upstream=False))]

    async def _pump(self, link: Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    upstream: bool) -> None:
        """Read everything that comes (the sender sees its bytes accepted, as its kernel would) and
        forward it in order whenever the link flows."""
        held: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def forward() -> None:
            while True:
                chunk = await held.get()
                await link.flowing.wait()
                if chunk is None:   # the sender closed: the other side learns it after the bytes before
                    with contextlib.suppress(OSError, RuntimeError):
                        writer.write_eof()
                    return
                writer.write(chunk)
                await writer.drain()

        forwarding = asyncio.create_task(forward())
        try:
            while chunk := await reader.read(65536):
                if upstream and self._marker is not None and self._marker in chunk:
                    link.marked = True
                    if not self.cutting:
                        self.cut()
                held.put_nowait(chunk)
            held.put_nowait(None)
            await forwarding
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            if not forwarding.done():
                forwarding.cancel()
            with contextlib.suppress(OSError, asyncio.CancelledError):
                await forwarding

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for link in self.links:
            link.flowing.set()
            for task in link.tasks:
                task.cancel()
            for writer in link.writers:
                writer.close()
        for link in self.links:
            await asyncio.gather(*link.tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
