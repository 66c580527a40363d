"""LiteLLM, configured once, and the in-process providers.

LiteLLM reaches for the web at import (its model price map) unless told not to; the
``contextecho.engine`` package sets that environment before anything imports LiteLLM.
Two in-process providers are registered through ``litellm.custom_provider_map``:

- ``local/smollm2-135m``: the embedded default model (CPU, no key, no network;
  :mod:`.local_provider`);
- ``fake/<anything>``: a deterministic stand-in for unit tests and dry runs.

LiteLLM itself (about 4 s to import) is imported when it is first needed: by
:func:`ensure_providers`, or by reading ``llm.litellm``. The names of the models and
providers here need no import, so a run whose calls the cache answers never imports it.
"""
from __future__ import annotations

import threading
from typing import Any

from . import local_model

LOCAL_PROVIDER = "local"
LOCAL_MODEL = f"{LOCAL_PROVIDER}/{local_model.MODEL_NAME}"
FAKE_PROVIDER = "fake"


_registered: dict[str, Any] = {}  # provider name -> its litellm.CustomLLM handler
_register_lock = threading.Lock()


def register_provider(name: str, handler: Any) -> None:
    """Add (or replace) an in-process provider (a ``litellm.CustomLLM``) so ``<name>/<model>``
    strings reach it."""
    litellm = _litellm()
    with _register_lock:
        entries = [e for e in litellm.custom_provider_map if e["provider"] != name]
        entries.append({"provider": name, "custom_handler": handler})
        litellm.custom_provider_map = entries
        litellm.utils.custom_llm_setup()
        _registered[name] = handler


def registered_providers() -> dict[str, Any]:
    return dict(_registered)


def ensure_providers() -> Any:
    """The configured ``litellm`` module with the in-process providers registered."""
    if LOCAL_PROVIDER not in _registered:
        from .local_provider import LocalProvider

        register_provider(LOCAL_PROVIDER, LocalProvider(LOCAL_PROVIDER))
    if FAKE_PROVIDER not in _registered:
        from .fake_model import FakeProvider

        register_provider(FAKE_PROVIDER, FakeProvider())
    return _litellm()


def _litellm() -> Any:
    """The ``litellm`` module, imported and configured on first use."""
    import litellm

    litellm.suppress_debug_info = True  # its banner would bury our own error messages
    return litellm


def __getattr__(name: str) -> Any:
    """``llm.litellm``: the configured module with the in-process providers registered,
    imported on first use (module doc)."""
    if name == "litellm":
        return ensure_providers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def provider_of(model: str) -> str:
    return model.split("/", 1)[0] if "/" in model else ""


def is_in_process(model: str) -> bool:
    return provider_of(model) in (LOCAL_PROVIDER, FAKE_PROVIDER)
