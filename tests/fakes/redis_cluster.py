"""A real Redis Cluster for tests: six redis-server processes (`--cluster-enabled yes`) joined by
`redis-cli --cluster create --cluster-replicas 1`, three masters and three replicas, with a node timeout
of one second so that a failover takes about that long.

`shared_cluster()` starts one per test run, in a directory that every pytest-xdist worker of the run
shares (tests/fakes/prebuilt.py's), under a lock file: the first worker that asks starts it, the others
use it, and the last one to let go stops it (a count of users beside it). `RedisClusterNodes.start` makes
one of a test's own (a test that kills a master)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.fakes import prebuilt

NODE_TIMEOUT_MS = 1000
NODES = 6


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_ports(count: int) -> list[int]:
    """Ports whose cluster bus ports (+10000) are free too; below the ephemeral range, so no client's
    outgoing connection takes one meanwhile. A bounded search."""
    ports: list[int] = []
    for _ in range(2000):
        port = random.randrange(20000, 29000)
        if port not in ports and _free(port) and _free(port + 10000):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise RuntimeError("no free ports for a Redis Cluster")


def _cli(port: int, *args: str, timeout: float = 10) -> str:
    result = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True,
                            text=True, timeout=timeout)
    return result.stdout


class RedisClusterNodes:
    def __init__(self, workdir: Path, ports: list[int]):
        self.dir, self.ports = workdir, ports
        self.killed: set[int] = set()

    @property
    def url(self) -> str:
        """One node's URL: with REDIS_CLUSTER=1 the client finds the others."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def pid(self, port: int) -> int | None:
        try:
            return int((self.dir / str(port) / "pid").read_text())
        except (OSError, ValueError):
            return None

    @classmethod
    def start(cls, workdir: Path) -> RedisClusterNodes:
        for tool in ("redis-server", "redis-cli"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"these tests need {tool} on PATH (apt install redis-server)")
        nodes = cls(workdir, cluster_ports(NODES))
        try:
            for port in nodes.ports:
                where = workdir / str(port)
                where.mkdir(parents=True, exist_ok=True)
                subprocess.run(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                                "--cluster-config-file", str(where / "nodes.conf"),
                                "--cluster-node-timeout", str(NODE_TIMEOUT_MS), "--dir", str(where),
                                "--appendonly", "no", "--save", "",
                                # a replica's first sync starts at once, not after the 5 s Redis waits by
                                # default for more replicas to share one diskless transfer
                                "--repl-diskless-sync-delay", "0", "--daemonize", "yes",
                                "--pidfile", str(where / "pid"), "--logfile", str(where / "log")],
                               check=True, timeout=30, capture_output=True)
            nodes._wait(lambda: all(_cli(p, "ping").strip() == "PONG" for p in nodes.ports), "the nodes to answer")
            result = subprocess.run(["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in nodes.ports),
                                     "--cluster-replicas", "1", "--cluster-yes"],
                                    capture_output=True, text=True, timeout=120)
            if result.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed:\n{result.stdout}\n{result.stderr}")
            nodes._wait(nodes.ready, "the cluster to be ready")
            nodes._wait(nodes.replicating, "every master's replica to be in sync")
        except BaseException:
            nodes.stop()
            raise
        return nodes

    def ready(self) -> bool:
        """Every node says the cluster is ok and sees three masters each with a replica."""
        for port in self.ports:
            if "cluster_state:ok" not in _cli(port, "cluster", "info"):
                return False
        lines = _cli(self.ports[0], "cluster", "nodes").splitlines()
        masters = [line for line in lines if "master" in line.split()[2] and "fail" not in line.split()[2]]
        replicas = [line for line in lines if "slave" in line.split()[2] and "fail" not in line.split()[2]]
        return len(masters) == 3 and len(replicas) == 3

    def replicating(self) -> bool:
        """Every master has its replica connected (ROLE): the link is up, the first sync done."""
        roles = [_cli(port, "role").split() for port in self.ports]
        masters = [role for role in roles if role and role[0] == "master"]
        return len(masters) == 3 and all(len(role) > 2 for role in masters) and \
            all(role[3] == "connected" for role in roles if role and role[0] == "slave")

    def _wait(self, condition, what: str, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except (OSError, subprocess.SubprocessError, IndexError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}")

    def failed_over(self, port: int) -> bool:
        """The node on `port` (killed) is marked failed by the others, and they all say the cluster is ok again:
        its replica has taken its slots over."""
        others = [p for p in self.ports if p != port and p not in self.killed]
        lines = _cli(others[0], "cluster", "nodes").splitlines()
        (victim,) = [line for line in lines if f":{port}@" in line.split()[1]]
        if "fail" not in victim.split()[2].split(","):
            return False
        return all("cluster_state:ok" in _cli(p, "cluster", "info") for p in others)

    def wait_failed_over(self, port: int, within: float = 60) -> None:
        self._wait(lambda: self.failed_over(port), f"the replica of {port} to take over", within)

    def master_with_replica(self, ports: list[int]) -> int | None:
        """Of `ports`, one that is a master with a replica connected now (ROLE), else None."""
        for port in ports:
            role = _cli(port, "role").split()
            if port not in self.killed and role and role[0] == "master" and len(role) > 2:
                return port
        return None

    def kill(self, port: int) -> None:
        """SIGKILL one node: no shutdown, no final save."""
        self.killed.add(port)
        pid = self.pid(port)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        for port in self.ports:
            self.kill(port)


@contextmanager
def shared_cluster() -> Iterator[RedisClusterNodes]:
    """The run's cluster, started by its first user and stopped by its last."""
    root = prebuilt.shared_dir() / "redis-cluster"
    state, lock = root / "state.json", prebuilt.shared_dir() / "redis-cluster.lock"
    with prebuilt.locked(lock):
        known = json.loads(state.read_text()) if state.exists() else None
        nodes = RedisClusterNodes(root / "nodes", known["ports"]) if known else None
        if nodes is None or not _alive(nodes):
            if nodes is not None:
                nodes.stop()
            shutil.rmtree(root, ignore_errors=True)
            nodes = RedisClusterNodes.start(root / "nodes")
            known = {"ports": nodes.ports, "users": 0}
        known["users"] += 1
        state.write_text(json.dumps(known))
    try:
        yield nodes
    finally:
        with prebuilt.locked(lock):
            known = json.loads(state.read_text())
            known["users"] -= 1
            if known["users"] <= 0:
                nodes.stop()
                shutil.rmtree(root, ignore_errors=True)
            else:
                state.write_text(json.dumps(known))


def _alive(nodes: RedisClusterNodes) -> bool:
    try:
        return nodes.ready()
    except (OSError, subprocess.SubprocessError, IndexError):
        return False
