"""The embedded model's prompt and decode rates (tokens per second), per thread setting.

For each setting a fresh process loads the shipped GGUF (``LocalChatModel``, as every run
loads it) and evaluates a real coding prefix of ``--prompt`` tokens from an empty context
(the prompt rate), then decodes ``--decode`` tokens greedily one at a time after it (the
decode rate, at that context length). Settings: the default (two threads for generation,
every core for prompts), ``CONTEXTECHO_THREADS=1`` (as each test worker runs it) and ``=2``.
Run it alone: another process on the cores halves what it measures.

``RESULT embedded_prompt_tok_s=<rate> target=>=190`` (the rate the issue measured), and
``RESULT embedded_decode_tok_s=<rate>``, for the default; one line per other setting.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import coding_session  # noqa: E402

TARGET_PROMPT = 190
SETTINGS = {"default": None, "threads_1": "1", "threads_2": "2"}

MEASURE = """
import json, sys, time
from contextecho.engine.local_model import LocalChatModel
messages, n_prompt, n_decode = json.loads(sys.stdin.read())
model = LocalChatModel()
llm = model._llm
prefix, suffix = model.prompt_tokens(messages)
tokens = ([t for segment in prefix for t in segment] + suffix)[:n_prompt]
llm.reset()
start = time.perf_counter()
llm.eval(tokens)
prompt_s = time.perf_counter() - start
start = time.perf_counter()
for _ in range(n_decode):
    llm.eval([int(model._last_logits().argmax())])
decode_s = time.perf_counter() - start
print(json.dumps({"prompt": len(tokens) / prompt_s, "decode": n_decode / decode_s, "n_prompt": len(tokens)}))
"""


def measure(threads: str | None, messages: list[dict], n_prompt: int, n_decode: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CONTEXTECHO_THREADS"}
    if threads is not None:
        env["CONTEXTECHO_THREADS"] = threads
    proc = subprocess.run([sys.executable, "-c", MEASURE], input=json.dumps([messages, n_prompt, n_decode]),
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"measuring {threads or 'the default'} threads failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", type=int, default=3000, help="prompt tokens evaluated (default 3000)")
    parser.add_argument("--decode", type=int, default=64, help="tokens decoded after it (default 64)")
    args = parser.parse_args()
    messages = coding_session(target_chars=40_000) + [{"role": "user", "content": "Who are you?"}]
    for name, threads in SETTINGS.items():
        rates = measure(threads, messages, args.prompt, args.decode)
        suffix = "" if name == "default" else f"_{name}"
        print(f"{name}: prompt {rates['prompt']:.0f} tok/s over {rates['n_prompt']} tokens, "
              f"decode {rates['decode']:.1f} tok/s after them")
        target = f" target=>={TARGET_PROMPT}" if name == "default" else ""
        print(f"RESULT embedded_prompt_tok_s{suffix}={rates['prompt']:.0f}{target}")
        print(f"RESULT embedded_decode_tok_s{suffix}={rates['decode']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
