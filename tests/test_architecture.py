"""Dependencies point one way (DESIGN.md): checked on the source, so a wrong import fails CI."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"bot", "handlers", "agent", "retrieval", "guardrails", "db"}
ALLOWED = {
    "handlers": {"handlers", "agent"},
    "agent": {"agent", "retrieval", "guardrails", "db"},
    "retrieval": {"retrieval", "db"},
    "guardrails": {"guardrails"},
    "db": {"db"},
}


def modules_imported_by(package: str):
    """(file, the full dotted name of each module it imports) for every file under `package` (a folder)."""
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield path, node.module


def imports_of(package: str):
    for path, module in modules_imported_by(package):
        yield path, module.split(".")[0]


def imports_under(package: str, forbidden: tuple[str, ...]) -> list[str]:
    """Imports from `package` of any module in (or below) one of `forbidden`."""
    return [f"{path.relative_to(ROOT)} imports {module}" for path, module in modules_imported_by(package)
            if any(module == name or module.startswith(name + ".") for name in forbidden)]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_one_way(package):
    for path, top in imports_of(package):
        if top in OURS:
            assert top in ALLOWED[package], f"{path.relative_to(ROOT)} imports {top}"


@pytest.mark.parametrize("package", ["agent", "retrieval", "guardrails", "db"])
def test_nothing_below_handlers_knows_telegram(package):
    assert not [p for p, top in imports_of(package) if top == "aiogram"]


@pytest.mark.parametrize("package", ["handlers", "guardrails", "db"])
def test_only_agent_and_retrieval_know_openai(package):
    assert not [p for p, top in imports_of(package) if top == "openai"]


def test_no_helpers_or_utils_modules():
    names = {p.stem for pkg in ALLOWED for p in (ROOT / pkg).rglob("*.py")}
    assert not names & {"utils", "helpers", "misc", "common"}


def test_bench_uses_only_the_public_test_support():
    """bench/ may use tests/fakes/ (the doubles and corpora shared with the tests), never a test module."""
    for path in sorted((ROOT / "bench").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tests":
                assert node.module.startswith("tests.fakes."), f"{path.name} imports {node.module}"


# The rooms inside the layers (DESIGN.md, "Layout").

def test_the_operators_analytics_do_not_run_the_customer_turn():
    """agent/analytics/ answers operators (and a customer's own spending, when the turn asks it); it
    never reaches back into the customer turn or the conversation around it."""
    assert not imports_under("agent/analytics", ("agent.turn", "agent.conversation", "agent.offline",
                                                 "agent.memory", "agent.memory_redis", "agent.handoff"))


def test_the_web_console_knows_neither_telegram_nor_delivery():
    assert not imports_under("handlers/web", ("aiogram", "handlers.telegram", "handlers.operators",
                                              "handlers.handoff", "handlers.delivery"))


def test_the_domain_takes_values_not_the_settings():
    """Only start-up and the commands (the maintenance commands, and analytics' ask and stats) read `Settings`
    in agent/; the turn, the tools and the stores are given plain values by the composition root."""
    readers = {path.relative_to(ROOT).as_posix() for path, module in modules_imported_by("agent")
               if module in ("agent.settings", "agent.startup", "agent.commands")}
    assert readers <= {"agent/startup.py", "agent/commands.py", "agent/analytics/commands.py"}, readers


def test_the_shops_time_zone_is_named_once_per_side_of_db():
    """agent/clock.py for everything above db/; db/ (which imports nothing of ours) names it for the
    orders' stored local times."""
    naming = {path.relative_to(ROOT).as_posix() for pkg in ALLOWED for path in (ROOT / pkg).rglob("*.py")
              if 'ZoneInfo("Asia/Shanghai")' in path.read_text(encoding="utf-8")}
    naming |= {"bot.py"} if 'ZoneInfo(' in (ROOT / "bot.py").read_text(encoding="utf-8") else set()
    assert naming == {"agent/clock.py", "db/records.py"}


def test_delivery_knows_neither_the_channels_nor_the_web_console():
    """handlers/delivery/ takes updates in and hands them to a dispatcher; the channels plug into it,
    never the other way round."""
    assert not imports_under("handlers/delivery", ("handlers.web", "handlers.telegram", "handlers.operators",
                                                   "handlers.handoff", "handlers.console"))
