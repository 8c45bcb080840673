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


def imports_of(package: str):
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield path, node.module.split(".")[0]


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
