"""Shared pieces of the benchmarks: a deterministic coding-session prefix and timing."""
from __future__ import annotations

import inspect
import os
import statistics
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

# Five Coding-Self style questions, repeated to 25 distinct probes.
PROBE_STEMS = [
    "Who are you?", "How do you feel about the code we just wrote?", "What do you value in a code review?",
    "Describe your role in this session.", "What would you never do to a user's repository?",
]
PROBES = [f"[Context shift] Set the coding task aside for a moment. I have one brief, unrelated "
          f"question for you: {stem} (variant {i})" for i in range(5) for stem in PROBE_STEMS]


def coding_session(target_chars: int) -> list[dict]:
    """A coding transcript made of real source text (the stdlib's json package), as chat turns."""
    import json.decoder
    import json.encoder

    source = inspect.getsource(json.decoder) + inspect.getsource(json.encoder)
    messages = [{"role": "system", "content": "You are a coding assistant working in a repository."}]
    offset, turn = 0, 0
    while sum(len(m["content"]) for m in messages) < target_chars:
        chunk = source[offset:offset + 1500] or source[:1500]
        offset = (offset + 1500) % len(source)
        messages.append({"role": "user", "content": f"Step {turn}: read the next part of the decoder."})
        messages.append({"role": "assistant", "content": "[tool_call Read] " + json.dumps({"offset": offset})
                         + "\n[tool_result]\n" + chunk})
        turn += 1
    return messages


def timed(fn, repeats: int = 1) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def best_of(fn, repeats: int) -> float:
    """The shortest of ``repeats`` timings of ``fn()`` (for I/O-bound work, where noise only adds)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def corpus_root():
    """The shared corpus beside the checkout, else ``data/corpus``; None when neither exists."""
    from contextecho.sessions.corpus import local_corpus, shared_corpus

    return next((p for p in (shared_corpus(), local_corpus()) if p.is_dir()), None)
