"""The compose file parses with a real Compose-spec parser (no Docker engine needed) and documents
the bring-up; the image runs as a non-root user with a health check."""

from pathlib import Path

import pytest
from compose_spec import PyCompose

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def compose():
    return PyCompose.from_yaml((ROOT / "docker-compose.yml").read_text(encoding="utf-8")).to_dict()


def test_compose_has_redis_with_persistence_and_the_bot(compose):
    services = compose["services"]
    assert {"redis", "bot", "worker", "receiver", "proxy"} <= set(services)
    assert {name for name, service in services.items() if "profiles" not in service} == {"redis", "bot"}
    assert all("profiles" not in services[name] for name in ("redis", "bot"))   # `docker compose up` as before
    assert "--appendonly" in services["redis"]["command"] and services["redis"]["healthcheck"]
    bot = services["bot"]
    assert bot["depends_on"]["redis"]["condition"] == "service_healthy"
    assert bot["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    assert bot["healthcheck"] and ".env" in str(bot["env_file"])
    assert {"redis-data", "bot-data", "caddy-data"} <= set(compose["volumes"])


def test_the_scale_and_webhook_profiles(compose):
    """`--profile scale --scale worker=N` adds workers; `--profile webhook` adds receiver replicas behind
    Caddy. Scaled services publish no host port (they would collide); the proxy publishes 80 and 443."""
    services = compose["services"]
    worker, receiver, proxy = services["worker"], services["receiver"], services["proxy"]
    assert set(worker["profiles"]) == {"scale", "webhook"} and set(receiver["profiles"]) == {"webhook"}
    assert worker["command"] == ["python", "bot.py", "work"] and receiver["command"] == ["python", "bot.py", "receive"]
    assert worker["depends_on"]["bot"]["condition"] == "service_healthy"
    assert receiver["environment"]["BOT_MODE"] == "webhook"
    assert "ports" not in worker and "ports" not in receiver
    assert {str(p).split(":")[0] for p in proxy["ports"]} == {"80", "443"}
    assert any("deploy/Caddyfile" in str(v) for v in proxy["volumes"])
    for service in (worker, receiver):
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"


def test_the_cluster_profile(compose):
    """`--profile cluster`: six Redis Cluster nodes on fixed addresses, each with its own volume and the
    append-only file, joined by a one-shot `redis-cli --cluster create … --cluster-replicas 1` (3 masters with a
    replica each), PostgreSQL for the audit store, a receiver and at least two workers with REDIS_CLUSTER=1 that
    start only once the cluster is made. The single-node services stay out of it (README: `--scale bot=0
    --scale redis=0`), and none of the cluster's services publishes a port."""
    services = compose["services"]
    cluster = {name for name, service in services.items() if "cluster" in service.get("profiles", [])}
    nodes = sorted(name for name in cluster if name.startswith("redis-node-"))
    assert len(nodes) == 6
    assert cluster == {*nodes, "redis-cluster-init", "postgres", "cluster-catalog", "cluster-receiver",
                       "cluster-worker"}
    addresses = []
    for name in nodes:
        node = services[name]
        command = node["command"]
        assert command[command.index("--cluster-enabled") + 1] == "yes" and "--appendonly" in command
        address = node["networks"]["cluster"]["ipv4_address"]
        assert command[command.index("--cluster-announce-ip") + 1] == address
        assert node["healthcheck"] and node["volumes"] == [f"{name}:/data"]
        addresses.append(address)
    init = services["redis-cluster-init"]
    script = " ".join(init["command"])
    assert "--cluster create" in script and "--cluster-replicas 1" in script and "--cluster-yes" in script
    assert all(f"{a}:6379" in script for a in addresses)
    assert set(init["depends_on"]) == set(nodes) and init["restart"] == "no"
    assert all(c["condition"] == "service_healthy" for c in init["depends_on"].values())
    assert services["postgres"]["healthcheck"] and "ports" not in services["postgres"]
    receiver, worker = services["cluster-receiver"], services["cluster-worker"]
    assert receiver["command"] == ["python", "bot.py", "receive"] and worker["command"] == ["python", "bot.py", "work"]
    assert worker["deploy"]["replicas"] >= 2
    for service in (receiver, worker):
        env = service["environment"]
        assert env["REDIS_CLUSTER"] == "1" and env["REDIS_URL"].startswith(f"redis://{addresses[0]}:6379")
        assert env["AUDIT_DB"].startswith("postgresql://") and "@postgres:5432/" in env["AUDIT_DB"]
        assert service["depends_on"]["redis-cluster-init"]["condition"] == "service_completed_successfully"
        assert "ports" not in service
    assert worker["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert {f"{n}:/data" for n in nodes} <= {v for n in nodes for v in services[n]["volumes"]}
    assert set(nodes) | {"postgres-data"} <= set(compose["volumes"])
    assert "--profile cluster up" in (ROOT / "docker-compose.yml").read_text()


def test_the_parser_is_strict():
    with pytest.raises(ValueError):
        PyCompose.from_yaml("services:\n  bot:\n    imagee: nope\n")


def test_env_example_documents_every_setting():
    from bot import Settings

    documented = {line.split("=")[0] for line in (ROOT / ".env.example").read_text().splitlines()
                  if line and not line.startswith("#")}
    expected = {name.upper() for name in Settings.model_fields} - {"DATABASE_PATH", "INDEX_PATH", "AUDIT_PATH", "AUDIT_DB",
                                                                     "REDIS_URL", "REDIS_PREFIX"}
    assert expected <= documented


def test_dockerfile_runs_as_non_root_with_a_healthcheck():
    text = (ROOT / "Dockerfile").read_text()
    assert "USER 10001:10001" in text and "HEALTHCHECK" in text and 'CMD ["python", "bot.py"]' in text
