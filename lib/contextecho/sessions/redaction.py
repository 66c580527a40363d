"""Redaction before anything leaves the machine, with a verification pass.

``redact(text) -> (text, report)``. A :class:`Redactor` first *discovers* sensitive
strings, then replaces **every** occurrence of each with an enumerated placeholder that
stays the same within one redactor (use one per session): ``<USER_1>``, ``<EMAIL_1>``,
``<HOST_1>:<PORT_1>``, ``<SSH_KEY_1>``, ``<SECRET_1>``, plus any extra classes given
(e.g. ``{"PROJECT": ["codename"]}``). Then it *verifies*: the output is searched for
every original string and :class:`RedactionLeak` is raised if one survives.

Classes and how they are found
- SSH_KEY: PEM private-key blocks; ``ssh-rsa`` / ``ssh-ed25519`` / ``ecdsa-*`` public keys.
- SECRET: API-key shapes (``sk-``, ``sk-ant-``, ``ghp_``/``gho_``/``github_pat_``,
  ``xox?-``, ``AKIA``, ``AIza``, ``hf_``, ``glpat-``, ``npm_``, JWTs), values of
  ``password=`` / ``api_key:`` / ``token=``-style assignments and ``Bearer`` headers, and
  high-entropy tokens (>= 32 chars of ``[A-Za-z0-9_+=-]`` mixing digits with upper and lower case,
  Shannon entropy above 4 bits/char; pure hex such as git hashes and snake_case
  identifiers stay).
- EMAIL: addresses, except role addresses of public services (``noreply@anthropic.com``,
  ``git@github.com``, ...).
- HOST / PORT: hosts of URLs with an explicit port, ``localhost`` / IPv4 with a port,
  non-loopback IPv4 addresses, ``ssh [user@]host`` targets and private-suffix names
  (``.local``, ``.internal``, ``.lan``, ``.corp``, ``.home``, ``.ts.net``).
- USER: the user segment of home paths (``/Users/x``, ``/home/x``, ``C:\\Users\\x``) and
  ``ssh user@``; generic account names (root, ubuntu, runner, ...) are left alone.
  Found names are replaced wherever they occur as a token (``-Users-alex-proj``,
  ``alex/feature-branch``).

Verification: emails, secrets and keys are searched as plain substrings; user and host
names as tokens (not inside a longer word, so the name ``tom`` does not flag ``tomato``).
The report holds counts and placeholders only, never the originals.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

from .errors import RedactionLeak

GENERIC_USERS = frozenset({"root", "ubuntu", "user", "runner", "admin", "ec2-user", "vscode",
                           "codespace", "codespaces", "node", "shared", "public", "guest",
                           "default", "debian", "centos", "pi", "app", "www-data", "git"})
PUBLIC_HOSTS = frozenset({"github.com", "gitlab.com", "bitbucket.org", "ssh.github.com",
                          "api.anthropic.com", "api.openai.com"})
ROLE_EMAILS = frozenset({"noreply@anthropic.com", "git@github.com", "git@gitlab.com",
                         "git@bitbucket.org", "noreply@github.com", "noreply@openai.com"})
TOKEN_CLASSES = ("USER", "HOST")  # replaced and verified as whole tokens

_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
                          re.S)
_PUBLIC_KEY = re.compile(r"\b(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)"
                         r" AAAA[0-9A-Za-z+/]+={0,3}")
_API_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-ant-[A-Za-z0-9_-]{20,}|sk-(?:proj-)?[A-Za-z0-9_-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|hf_[A-Za-z0-9]{30,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|npm_[A-Za-z0-9]{36}|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})")
_ASSIGNED = re.compile(r"(?i)\b(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|token"
                       r"|password|passwd|pwd|client[_-]?secret)\b[\"']?\s*[:=]\s*[\"']?"
                       r"([^\s\"'`,;)}\]<>]{8,})")
_BEARER = re.compile(r"\bBearer\s+([A-Za-z0-9._~+/=-]{16,})")
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9_+=-])[A-Za-z0-9_+=-]{32,}(?![A-Za-z0-9_+=-])")
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_URL_HOST_PORT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^@/\s]+@)?([A-Za-z0-9.-]+):(\d{2,5})\b")
_BARE_HOST_PORT = re.compile(r"(?<![A-Za-z0-9.-])(localhost|(?:\d{1,3}\.){3}\d{1,3}):(\d{2,5})\b")
_IPV4 = re.compile(r"(?<![0-9.])((?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3})(?![0-9.])")
_SSH_TARGET = re.compile(r"\b(?:ssh|scp|sftp|rsync|mosh)\s+(?:-\S+\s+(?:\S+\s+)?)*?"
                         r"(?:([a-z_][a-z0-9_.-]*)@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)"
                         r"|([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+))(?=[\s:'\"]|$)")
_PRIVATE_HOST = re.compile(r"\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:local|internal|lan|corp|home|intranet|ts\.net)\b")
_HOME = re.compile(r"(?:/Users/|/home/|[A-Za-z]:\\\\?Users\\\\?)([A-Za-z0-9._-]+)")
_LOOPBACK = frozenset({"127.0.0.1", "0.0.0.0", "255.255.255.255"})


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _high_entropy(token: str) -> bool:
    """Random-looking: digits, upper and lower case letters, > 4 bits/char, few separators."""
    if sum(ch in "_-" for ch in token) > len(token) // 8:
        return False  # snake_case / kebab-case identifiers
    return (any(ch.isdigit() for ch in token) and any(ch.isupper() for ch in token)
            and any(ch.islower() for ch in token) and _entropy(token) > 4.0)


@dataclass(frozen=True)
class RedactionReport:
    """What was replaced: per class, distinct strings and replacements made."""

    distinct: dict[str, int]
    replacements: dict[str, int]

    @property
    def n_replacements(self) -> int:
        return sum(self.replacements.values())


class Redactor:
    """Discover-then-replace redaction with stable placeholders; see the module doc."""

    def __init__(self, extra: Mapping[str, Iterable[str]] | None = None):
        self._originals: dict[str, tuple[str, str]] = {}  # original -> (class, placeholder)
        self._per_class: Counter = Counter()
        self._replacements: Counter = Counter()
        self._pattern: re.Pattern | None = None
        for cls, values in (extra or {}).items():
            for v in values:
                if v:
                    self._add(cls.upper(), v)

    # -- discovery --------------------------------------------------------------------
    def _add(self, cls: str, original: str) -> None:
        if original in self._originals or original.startswith("<"):
            return
        self._per_class[cls] += 1
        self._originals[original] = (cls, f"<{cls}_{self._per_class[cls]}>")
        self._pattern = None

    def discover(self, text: str) -> None:
        add = self._add
        for m in _PRIVATE_KEY.finditer(text):
            add("SSH_KEY", m.group(0))
        for m in _PUBLIC_KEY.finditer(text):
            add("SSH_KEY", m.group(0))
        for m in _API_KEY.finditer(text):
            add("SECRET", m.group(0))
        for rx in (_ASSIGNED, _BEARER):
            for m in rx.finditer(text):
                if not m.group(1).startswith("<") and not m.group(1).startswith("$"):
                    add("SECRET", m.group(1))
        for m in _LONG_TOKEN.finditer(text):
            if _high_entropy(m.group(0)):
                add("SECRET", m.group(0))
        for m in _EMAIL.finditer(text):
            if m.group(0).lower() not in ROLE_EMAILS:
                add("EMAIL", m.group(0))
        for rx in (_URL_HOST_PORT, _BARE_HOST_PORT):
            for m in rx.finditer(text):
                if m.group(1).lower() in PUBLIC_HOSTS:
                    continue
                add("HOST", m.group(1))
                add("PORT", f"{m.group(1)}:{m.group(2)}")
        for m in _IPV4.finditer(text):
            if m.group(1) not in _LOOPBACK:
                add("HOST", m.group(1))
        for m in _SSH_TARGET.finditer(text):
            user, host = m.group(1), m.group(2) or m.group(3)
            if user and user not in GENERIC_USERS:
                add("USER", user)
            if host.lower() not in PUBLIC_HOSTS and not host.isdigit():
                add("HOST", host)
        for m in _PRIVATE_HOST.finditer(text):
            add("HOST", m.group(0))
        for m in _HOME.finditer(text):
            name = m.group(1)
            if name not in GENERIC_USERS and len(name) >= 2:
                add("USER", name)

    # -- replacement ------------------------------------------------------------------
    def _compiled(self) -> re.Pattern:
        if self._pattern is None:
            alts = []
            for original, (cls, _) in sorted(self._originals.items(), key=lambda kv: -len(kv[0])):
                if cls == "PORT":
                    continue  # "host:port" is handled by the HOST alternative plus the port rule
                esc = re.escape(original)
                alts.append(rf"(?<![A-Za-z0-9_]){esc}(?![A-Za-z0-9_])" if cls in TOKEN_CLASSES else esc)
            self._pattern = re.compile("|".join(alts)) if alts else re.compile(r"(?!x)x")
        return self._pattern

    def apply(self, text: str) -> str:
        originals = self._originals

        def sub(m: re.Match) -> str:
            cls, placeholder = originals[m.group(0)]
            self._replacements[cls] += 1
            return placeholder

        out = self._compiled().sub(sub, text)
        # ports of redacted host:port pairs: "<HOST_1>:8080" -> "<HOST_1>:<PORT_1>"
        return _HOST_THEN_PORT.sub(self._port_sub, out) if "PORT" in self._per_class else out

    def _port_sub(self, m: re.Match) -> str:
        host = next((o for o, (c, p) in self._originals.items() if p == m.group(1)), None)
        entry = self._originals.get(f"{host}:{m.group(2)}") if host else None
        if entry is None:
            return m.group(0)
        self._replacements["PORT"] += 1
        return f"{m.group(1)}:{entry[1]}"

    def redact(self, text: str) -> str:
        """Discover in ``text``, replace, verify; returns the redacted text."""
        self.discover(text)
        out = self.apply(text)
        self.verify(out)
        return out

    # -- verification -----------------------------------------------------------------
    def survivors(self, text: str) -> list[str]:
        found = []
        for original, (cls, _) in self._originals.items():
            if cls == "PORT":
                continue
            if cls in TOKEN_CLASSES:
                if re.search(rf"(?<![A-Za-z0-9_]){re.escape(original)}(?![A-Za-z0-9_])", text):
                    found.append(cls)
            elif original in text:
                found.append(cls)
        return found

    def verify(self, text: str, where: str = "") -> None:
        """Raise :class:`RedactionLeak` if any discovered original appears in ``text``."""
        found = self.survivors(text)
        if found:
            raise RedactionLeak(found, where)

    def report(self) -> RedactionReport:
        return RedactionReport(dict(self._per_class), dict(self._replacements))


_HOST_THEN_PORT = re.compile(r"(<HOST_\d+>):(\d{2,5})\b")


def redact(text: str, redactor: Redactor | None = None) -> tuple[str, RedactionReport]:
    """Redact one text (a fresh redactor unless one is given); verify; report."""
    r = redactor or Redactor()
    out = r.redact(text)
    return out, r.report()
