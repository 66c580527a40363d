"""A batch through the call site on the embedded model, then the same batch again from the cache.

Both runs open the cache afresh (index load included), as a second notebook run would.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PROBES, coding_session, timed  # noqa: E402

from contextecho.engine.cache import CallCache  # noqa: E402
from contextecho.engine.calls import generate  # noqa: E402
from contextecho.engine.llm import LOCAL_MODEL  # noqa: E402
from contextecho.engine.model_request import ModelRequest  # noqa: E402


def main() -> None:
    session = coding_session(target_chars=3_000)
    requests = [ModelRequest(LOCAL_MODEL, session + [{"role": "user", "content": p}],
                             {"temperature": 0, "max_tokens": 32}) for p in PROBES]
    with tempfile.TemporaryDirectory() as root:
        first_s, first = timed(lambda: generate(requests, cache=CallCache(root), progress=False))
        second_s, second = timed(lambda: generate(requests, cache=CallCache(root), progress=False), repeats=5)
    assert first.n_hits == 0 and first.n_errors == 0, "first run should compute every request"
    assert second.n_hits == len(requests) and second.texts() == first.texts()
    print(f"{len(requests)} probes on {LOCAL_MODEL}, prompt ~{first.records[0].prompt_tokens} tokens")
    print(f"first run (computes):      {first_s:8.3f} s")
    print(f"second run (cache, median of 5): {second_s:8.3f} s")
    print(f"RESULT cached_rerun_speedup={first_s / second_s:.0f} target=50")


if __name__ == "__main__":
    main()
