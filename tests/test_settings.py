"""Configuration: typed, secrets hidden, a bad value is one clear line, not a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.startup import embedder_from
from bot import Settings, StartupError, load_settings

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.upper() in Settings.model_fields or name.upper() in {f.upper() for f in Settings.model_fields}:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    return monkeypatch


def test_defaults(clean_env):
    settings = load_settings()
    assert settings.bot_token is None and settings.redis_url is None and settings.openai_api_key is None
    assert settings.database_path == Path("data/shop.db")
    assert settings.resolved_index_path == Path("data/shop.index")
    assert settings.operator_ids == []


def test_values_and_secret_masking(clean_env):
    clean_env.setenv("BOT_TOKEN", "123:SECRET")
    clean_env.setenv("OPERATOR_IDS", "12, 34,")
    clean_env.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    settings = load_settings()
    assert settings.operator_ids == [12, 34]
    assert "SECRET" not in repr(settings) and "SECRET" not in str(settings)
    assert settings.bot_token.get_secret_value() == "123:SECRET"


def test_the_embeddings_endpoint_gets_the_requests_in_flight_configured(clean_env):
    clean_env.setenv("EMBEDDING_MODEL", "text-embedding-v3")
    clean_env.setenv("EMBEDDING_CONCURRENCY", "8")
    assert embedder_from(load_settings())._concurrency == 8
    clean_env.delenv("EMBEDDING_CONCURRENCY")
    assert embedder_from(load_settings())._concurrency == 4


def test_env_file_is_read(clean_env, tmp_path):
    (tmp_path / ".env").write_text("LLM_MODEL=qwen-max\nBOT_MODE=webhook\n")
    settings = load_settings()
    assert (settings.llm_model, settings.bot_mode) == ("qwen-max", "webhook")


@pytest.mark.parametrize(("name", "value"), [("REDIS_URL", "nonsense"), ("BOT_MODE", "carrier-pigeon"),
                                              ("OPERATOR_IDS", "alice"), ("WEBHOOK_PORT", "0"),
                                              ("EMBEDDING_CONCURRENCY", "0")])
def test_bad_value_names_the_variable(clean_env, name, value):
    clean_env.setenv(name, value)
    with pytest.raises(StartupError, match=f"invalid {name}"):
        load_settings()


@pytest.mark.slow   # a real bot.py process
def test_bad_value_at_startup_is_one_line_without_secrets(tmp_path):
    env = {**os.environ, "REDIS_URL": "nonsense", "BOT_TOKEN": "999:TOPSECRET"}
    result = subprocess.run([sys.executable, str(ROOT / "bot.py")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "REDIS_URL" in result.stderr and "Traceback" not in result.stderr
    assert "TOPSECRET" not in result.stderr + result.stdout


@pytest.mark.slow   # a real bot.py process
def test_catalog_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    env = {**os.environ, "DATABASE_PATH": str(blocker / "sub" / "shop.db")}
    env.pop("BOT_TOKEN", None)
    result = subprocess.run([sys.executable, str(ROOT / "bot.py"), "run"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert "DATABASE_PATH" in result.stderr and "Traceback" not in result.stderr


def test_turn_process_auto_means_a_child_where_there_is_a_second_core(monkeypatch):
    from handlers import turn_process

    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert not turn_process.wanted("auto") and turn_process.wanted("on") and not turn_process.wanted("off")
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert turn_process.wanted("auto")
    assert Settings(_env_file=None).turn_process == "auto"
