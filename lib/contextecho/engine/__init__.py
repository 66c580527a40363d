"""The engine: one content-addressed model request, its stored call record, the journaled
Parquet cache, the one call site (LiteLLM) with its providers (the embedded model, the
fake model, servers), run manifests, project paths, and score distributions read from
token probabilities. Nothing here knows about any design (ContextEcho, CAPE, ANCHOR)."""
import os

# LiteLLM fetches its model price map from the web at import unless told not to; every
# module that imports LiteLLM lives in this package, so this runs before the first import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
