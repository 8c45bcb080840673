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
    assert set(services) == {"redis", "bot", "worker", "receiver", "proxy"}
    assert all("profiles" not in services[name] for name in ("redis", "bot"))   # `docker compose up` as before
    assert "--appendonly" in services["redis"]["command"] and services["redis"]["healthcheck"]
    bot = services["bot"]
    assert bot["depends_on"]["redis"]["condition"] == "service_healthy"
    assert bot["environment"]["REDIS_URL"] == "redis://redis:6379/0"
    assert bot["healthcheck"] and ".env" in str(bot["env_file"])
    assert set(compose["volumes"]) == {"redis-data", "bot-data", "caddy-data"}


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
