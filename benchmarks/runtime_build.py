"""The embedded runtime's build from source, as ``make setup`` builds it, beside the full build.

``make setup`` builds ``llama-cpp-python`` from its sdist with the Makefile's ``CMAKE_ARGS``,
which include a CMake file (``LLAMA_SLIM``, written into ``.venv``) that switches off
llama.cpp's ``common`` library: llama-cpp-python's CMakeLists forces it on, yet neither the
package nor contextecho loads it. This builds the installed version's wheel twice from PyPI's
sdist, with no pip cache: with the Makefile's arguments, and with the same arguments but the
include; it prints both wall times, and then checks that the two builds compute the same
thing: greedy decoding on the embedded model's weights from a fixed prompt, one process per
build, the last position's logits compared to the bit.

It needs the network (PyPI's sdist) and a C/C++ compiler, and takes as long as it measures
(about 8 minutes on two cores); run it alone, after ``make setup``.

``RESULT runtime_build_s=<seconds>`` (the Makefile's build), ``RESULT runtime_build_full_s=<seconds>``,
``RESULT runtime_build_speedup=<full / slim>`` and ``RESULT runtime_build_same_logits=<1|0> target=1``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = "-DCMAKE_PROJECT_llama.cpp_INCLUDE="

DECODE = """
import json, sys
import llama_cpp
from contextecho.engine.local_model import LocalChatModel
model = LocalChatModel(n_threads=1)  # as every run loads the embedded model
llm = model._llm
llm.eval(llm.tokenize(open(sys.argv[1], "rb").read())[:600])
out = []
for _ in range(24):
    out.append(int(model._last_logits().argmax()))
    llm.eval([out[-1]])
print(json.dumps({"package": llama_cpp.__file__, "tokens": out, "logits": model._last_logits().tobytes().hex()}))
"""


def makefile_cmake_args() -> str:
    """``CMAKE_ARGS`` as the Makefile exports it to ``make setup``'s pip."""
    done = subprocess.run(["make", "--no-print-directory", "-s", "--eval", 'print-cmake-args: ; @echo "$$CMAKE_ARGS"',
                           "print-cmake-args"], cwd=ROOT, capture_output=True, text=True, env=_without_cmake_args())
    if done.returncode != 0:
        raise SystemExit(f"reading CMAKE_ARGS from the Makefile failed:\n{done.stderr}")
    return done.stdout.strip()


def _without_cmake_args() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "CMAKE_ARGS"}


def build(cmake_args: str, folder: Path) -> float:
    """Build the installed llama-cpp-python's wheel into ``folder``; the wall time."""
    folder.mkdir(parents=True)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-cache-dir", "--no-deps", "--no-binary", "llama-cpp-python",
                           "--quiet", "-w", str(folder), f"llama-cpp-python=={version('llama-cpp-python')}"],
                          env={**_without_cmake_args(), "CMAKE_ARGS": cmake_args}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"building llama-cpp-python with CMAKE_ARGS={cmake_args!r} failed:\n{done.stderr[-4000:]}")
    wheel = next(folder.glob("llama_cpp_python-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder / "unpacked")
    return wall


def decode(folder: Path) -> dict:
    """Greedy decoding with the build unpacked in ``folder`` (ahead of the installed one)."""
    prompt = ROOT / "lib" / "contextecho" / "engine" / "local_model.py"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder / "unpacked"), str(ROOT / "lib")])}
    done = subprocess.run([sys.executable, "-c", DECODE, str(prompt)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"decoding with the build in {folder} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["package"].startswith(str(folder)):
        raise SystemExit(f"the build in {folder} was not the one imported ({result['package']})")
    return result


def main() -> int:
    slim_args = makefile_cmake_args()
    include = next((a for a in slim_args.split() if a.startswith(INCLUDE)), None)
    if include is None:
        raise SystemExit(f"the Makefile's CMAKE_ARGS name no {INCLUDE}... file (a checkout path with a space?): "
                         f"{slim_args}")
    if not Path(include[len(INCLUDE):]).is_file():
        raise SystemExit(f"{include[len(INCLUDE):]} is missing: run `make setup` first")
    full_args = " ".join(a for a in slim_args.split() if a != include)
    with tempfile.TemporaryDirectory(prefix="runtime-build-") as tmp:
        slim_s = build(slim_args, Path(tmp) / "slim")
        print(f"make setup's build (common switched off): {slim_s:.0f} s")
        full_s = build(full_args, Path(tmp) / "full")
        print(f"the full build (llama-cpp-python's own targets): {full_s:.0f} s")
        slim, full = decode(Path(tmp) / "slim"), decode(Path(tmp) / "full")
    same = slim["tokens"] == full["tokens"] and slim["logits"] == full["logits"]
    print(f"greedy decoding: the same 24 tokens and last logits in both builds: {same}")
    print(f"RESULT runtime_build_s={slim_s:.0f}")
    print(f"RESULT runtime_build_full_s={full_s:.0f}")
    print(f"RESULT runtime_build_speedup={full_s / slim_s:.2f}")
    print(f"RESULT runtime_build_same_logits={int(same)} target=1")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
