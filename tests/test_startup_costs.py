"""What a start costs: a process loads only what its mode uses, and the policy chunks' vectors are read from
beside the index instead of being embedded again at every start."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from retrieval.embedders import LocalE5Embedder
from retrieval.passages import PassageSearch, read_stored_vectors, save_vectors, stored_vectors_path
from retrieval.service import policy_passages
from tests.fakes import prebuilt

ROOT = prebuilt.ROOT


class CountingEmbedder:
    """The local embedder, counting the chunk texts it is asked to embed (a new instance: nothing remembered)."""

    def __init__(self, inner: LocalE5Embedder, name: str | None = None):
        self.inner, self.name, self.dimensions = inner, name or inner.name, inner.dimensions
        self.embedded = 0

    async def embed_queries(self, texts):
        return await self.inner.embed_queries(texts)

    async def embed_passages(self, texts):
        self.embedded += len(texts)
        return await self.inner.embed_passages(texts)


def imported_after(code: str) -> set[str]:
    """Which heavy packages a fresh interpreter holds after running `code` in the project's root."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in ('aiogram', 'openai') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


def test_the_console_and_the_commands_load_neither_aiogram_nor_the_openai_client():
    # the console chat and the maintenance commands never talk to Telegram; without OPENAI_API_KEY nothing
    # talks to an OpenAI endpoint: ~4 s of pydantic schema building (aiogram) and ~1 s (openai) not paid
    assert imported_after("import bot, agent.startup, handlers.console, handlers.stores, handlers.web.app, "
                          "agent.conversation") == set()
    # with a key, the chat model's client is loaded (the probe can fail)
    assert imported_after("from agent.openai_model import OpenAIChatModel") == {"openai"}


async def test_a_start_reads_the_policy_vectors_kept_beside_the_index(conn, tmp_path, local_embedder):
    passages = (await policy_passages(conn))[:6]   # a few chunks: what is embedded is counted, not timed
    stored = stored_vectors_path(tmp_path / "shop.index")
    assert stored.name == "shop.index.policies.npz"
    await save_vectors(stored, passages, local_embedder)
    assert stored.stat().st_mode & 0o777 == 0o600

    reader = CountingEmbedder(local_embedder)
    kept = await PassageSearch.build(passages, reader, stored)
    assert reader.embedded == 0                                     # read, not embedded
    fresh = await PassageSearch.build(passages, CountingEmbedder(local_embedder))
    assert np.allclose(kept.vectors, fresh.vectors, atol=1e-5)
    for query in ("退货要多久", "可以开发票吗", "几点有人工客服"):
        assert await kept.search(query) == await fresh.search(query)


async def test_vectors_of_another_model_or_a_broken_file_are_embedded_again(conn, tmp_path, local_embedder):
    passages = (await policy_passages(conn))[:6]   # a few chunks: what is embedded is counted, not timed
    stored = stored_vectors_path(tmp_path / "shop.index")
    await save_vectors(stored, passages, local_embedder)
    other = CountingEmbedder(local_embedder, name="openai:text-embedding-v3")
    await PassageSearch.build(passages, other, stored)
    assert other.embedded == len(passages)                         # another model's vectors are not used
    assert read_stored_vectors(stored, "openai:text-embedding-v3") == {}

    stored.write_bytes(b"not an npz file")
    broken = CountingEmbedder(local_embedder)
    await PassageSearch.build(passages, broken, stored)
    assert broken.embedded == len(passages)


async def test_a_changed_policy_text_is_embedded_the_rest_read(conn, tmp_path, local_embedder):
    passages = (await policy_passages(conn))[:6]   # a few chunks: what is embedded is counted, not timed
    stored = stored_vectors_path(tmp_path / "shop.index")
    await save_vectors(stored, passages, local_embedder)
    edited = [*passages[:-1], type(passages[-1])(passages[-1].passage_id, passages[-1].title, "已修改的政策正文")]
    reader = CountingEmbedder(local_embedder)
    await PassageSearch.build(edited, reader, stored)
    assert reader.embedded == 1


def test_the_built_demo_data_keeps_its_policy_vectors(shared_builds, tmp_path):
    # `bot.py init-db` (which builds the index) writes them, so a real process started on the demo data
    # reads them (tests/fakes/prebuilt.py copies the three files)
    db, index = prebuilt.demo_data(tmp_path / "data")
    kept = read_stored_vectors(stored_vectors_path(index), LocalE5Embedder.name)
    assert len(kept) >= 10


async def test_saving_again_embeds_only_the_changed_chunks_unless_rebuilding(conn, tmp_path, local_embedder):
    passages = (await policy_passages(conn))[:6]
    stored = stored_vectors_path(tmp_path / "shop.index")
    await save_vectors(stored, passages, local_embedder)
    edited = [*passages[:-1], type(passages[-1])(passages[-1].passage_id, passages[-1].title, "已修改的政策正文")]
    builder = CountingEmbedder(local_embedder)
    await save_vectors(stored, edited, builder)
    assert builder.embedded == 1                                    # the others read from the file
    assert len(read_stored_vectors(stored, local_embedder.name)) == len(edited)
    rebuilding = CountingEmbedder(local_embedder)
    await save_vectors(stored, edited, rebuilding, keep=False)
    assert rebuilding.embedded == len(edited)



AIOGRAM_PROBE = """
import sys
import handlers.delivery.runners
import aiogram.methods
from aiogram.methods.base import Response
from aiogram.types import Update
from pydantic import BaseModel

assert not Update.__pydantic_complete__, 'aiogram built its schemas at import'
raw = {'update_id': 7, 'message': {'message_id': 3, 'date': 1, 'text': '足球多少钱',
       'chat': {'id': 5, 'type': 'private', 'first_name': '顾客'},
       'from': {'id': 5, 'is_bot': False, 'first_name': '顾客'},
       'entities': [{'type': 'bold', 'offset': 0, 'length': 2}],
       'reply_markup': {'inline_keyboard': [[{'text': '有用', 'callback_data': 'v:1'}]]},
       'photo': [{'file_id': 'f', 'file_unique_id': 'u', 'width': 1, 'height': 1}]}}
(update,) = Response[list[Update]].model_validate({'ok': True, 'result': [raw]}).result
assert update.message.reply_markup.inline_keyboard[0][0].callback_data == 'v:1'
assert update.model_dump(mode='json', exclude_none=True, by_alias=True) == raw

modules = [m for name, m in list(sys.modules.items()) if name.startswith('aiogram.')]
models = {v for m in modules for v in vars(m).values()
          if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == m.__name__}
assert len(models) > 400 and any(not model.__pydantic_complete__ for model in models)
for model in models:
    if not model.__pydantic_generic_metadata__['parameters']:   # generic (Response): parametrized below
        model.model_rebuild(raise_errors=True, _parent_namespace_depth=0)
        assert model.__pydantic_complete__, model.__name__
for name in aiogram.methods.__all__:
    method = getattr(aiogram.methods, name)
    if isinstance(method, type) and issubclass(method, aiogram.methods.TelegramMethod) and \\
            method is not aiogram.methods.TelegramMethod:
        assert Response[method.__returning__].__pydantic_complete__, name
print('ok')
"""


@pytest.mark.slow   # a fresh interpreter (a process of its own) that builds all ~450 schemas: ~6 s of CPU
def test_aiogram_schemas_are_built_where_first_used_and_every_model_completes():
    """The runners import aiogram with its ~450 schemas left to their first use: in a fresh interpreter,
    after the import `Update` is not built yet; as a polling bot first meets it, a getUpdates response
    holding a rich update validates (its generic `Response[list[Update]]` builds the deferred types it
    holds) and dumps back to what came in; and no class is left unresolvable: every aiogram model, and the
    response of every method, builds from the namespace kept for it."""
    result = subprocess.run([sys.executable, "-c", AIOGRAM_PROBE], cwd=ROOT, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_the_telegram_modes_run_on_uvloop():
    """`run_serving` (the Telegram modes' asyncio.run) runs its coroutine on uvloop's loop, and returns its result."""
    import asyncio

    from handlers.process import run_serving

    async def which() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__module__

    assert run_serving(which()).startswith("uvloop")


def test_every_module_importing_aiogram_defers_its_schemas_first():
    """Whichever module a mode imports first, aiogram's ~450 schemas are left to their first use: every
    module of ours that imports aiogram when it is imported does `import handlers.aiogram_import` before
    (the receiver once imported the inbox first and built all of them at start: ~6 s of CPU here)."""
    import ast

    offenders = []
    ours = [ROOT / "bot.py"] + [path for role in ("agent", "db", "guardrails", "handlers", "retrieval")
                                for path in sorted((ROOT / role).rglob("*.py"))]
    for path in ours:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deferred = False
        for node in tree.body:   # the imports that run when the module is imported (not in functions)
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if "handlers.aiogram_import" in names:
                deferred = True
            elif any(name == "aiogram" or name.startswith("aiogram.") for name in names) and not deferred:
                offenders.append(str(path.relative_to(ROOT)))
                break
    assert offenders == []
