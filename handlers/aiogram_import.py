"""Imported before aiogram: aiogram is then imported without building a validator for each of its ~450
Telegram types and methods up front.

aiogram declares its models with pydantic's `defer_build`, but `aiogram.types` then calls `model_rebuild`
on every type with the types' namespace, which builds them all: ~2-3 s of CPU in every process that talks
to Telegram (most of a bot's start-up, and of each real-process test), for the twenty-odd classes a bot
uses. While aiogram is imported here, that forced rebuild only records the namespace beside the class;
pydantic completes a class from it the first time the class validates something (a tenth of a second for
`Update` and everything it holds). Every other aiogram model (the methods, the generic `Response[...]`)
gets the same namespace, which the deferred types it holds need. Should pydantic or aiogram change shape,
aiogram is imported the usual way. The Telegram runners and the tests import this module first
(`import handlers.aiogram_import` before their aiogram imports).
"""

from __future__ import annotations

import sys


def import_aiogram() -> None:
    """Import aiogram (types and methods) with their schemas left to their first use; once per process."""
    if "aiogram" in sys.modules:
        return
    try:
        from pydantic import BaseModel
        from pydantic._internal._model_construction import unpack_lenient_weakvaluedict
    except ImportError:   # another pydantic: the usual import
        import aiogram  # noqa: F401
        return

    original = BaseModel.__dict__["model_rebuild"]
    namespace: dict = {}   # the types' namespace aiogram passes: one dict shared by every class

    def model_rebuild(cls, *, force=False, raise_errors=True, _parent_namespace_depth=2, _types_namespace=None):
        if _types_namespace is not None and not force and cls.__module__.startswith("aiogram."):
            namespace.update(_types_namespace)
            _remember(cls, namespace, unpack_lenient_weakvaluedict)
            return None
        return original.__func__(cls, force=force, raise_errors=raise_errors,
                                 _parent_namespace_depth=_parent_namespace_depth + 1,
                                 _types_namespace=_types_namespace)

    BaseModel.model_rebuild = classmethod(model_rebuild)
    try:
        import aiogram.methods
        import aiogram.types  # noqa: F401
    finally:
        BaseModel.model_rebuild = original
    if not namespace:   # aiogram no longer rebuilds its types at import: nothing was deferred
        return
    # every model aiogram defined, the methods and the generic `Response[...]` above all: a model being built
    # resolves the names of the deferred types it holds in its own namespace
    for module in [m for name, m in sys.modules.items() if name.startswith("aiogram.")]:
        for value in list(vars(module).values()):
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module.__name__:
                _remember(value, namespace, unpack_lenient_weakvaluedict)


def _remember(cls, namespace: dict, unpack) -> None:
    """Make `namespace` part of what pydantic resolves `cls`'s forward references in when it completes it."""
    own = unpack(cls.__pydantic_parent_namespace__)
    cls.__pydantic_parent_namespace__ = {**own, **namespace} if own else namespace


import_aiogram()
