"""Redaction before anything leaves the machine, with a verification pass.

``redact(text) -> (text, report)``. A :class:`Redactor` first *discovers* sensitive
strings, then replaces them by enumerated placeholders that stay the same within one
redactor (use one per session): ``<USER_1>``, ``<EMAIL_1>``, ``<HOST_1>:<PORT_1>``,
``<SECRET_1>`` ..., plus any extra classes given (e.g. ``{"PROJECT": ["codename"]}``).
Then it *verifies*: the output is searched for every original string, and every rule is
run again on the output; anything found is a leak and :class:`RedactionLeak` is raised.

The rules live in the modules of this package, each with its table of what it finds:

==========================================  ===========================================
module                                      classes
==========================================  ===========================================
:mod:`~.secrets` (shapes, detect-secrets,   ``SSH_KEY``, ``SECRET`` (API keys, tokens,
tokens beside their service or id)          webhooks, high-entropy strings)
:mod:`~.passwords` (by context)             ``SECRET`` (assignments, URL credentials,
                                            auth headers and tuples, ``.pgpass``, YAML
                                            blocks, ``echo | base64``, cookies, sessions)
:mod:`~.identities`                         ``EMAIL``, ``PERSON``, ``USER``
:mod:`~.network`                            ``HOST``, ``PORT``, ``MAC``, ``ARN``, ``ACCOUNT``
:mod:`~.numbers` (phonenumbers, stdnum)     ``PHONE``, ``CARD``, ``IBAN``, ``SSN``, ``CRYPTO``
:mod:`~.addresses` (pyap)                   ``ADDRESS``
==========================================  ===========================================

Encodings. Discovery and verification read each text as written, with JSON / shell
string escapes resolved (up to ``ESCAPE_LEVELS`` times: a JSON document in a tool input,
in a record, in a rendered tool call; ``\u00df`` included), and with its percent-encoded
runs decoded in place (once or twice: ``?q=%7B%22password%22...``). Each original is then
also searched for as JSON escapes it (at each of those levels, non-ASCII kept or escaped),
as percent-encoding writes it (``%40``, ``+``), in its unescaped form, and for numbers in
their other spellings (an IBAN compact or grouped, in either case, a card with or without
separators); a percent-encoded run whose decoded text holds an original is decoded,
redacted and encoded again. Two originals that overlap in a text are replaced as one
span, so no tail of either is left behind.

Replacement. A discovered string is replaced wherever it occurs; user, person, host and
project names case-insensitively and as whole tokens (``tom`` does not touch ``tomato``),
short secrets (under 12 characters) as tokens, longer ones as substrings. Values too
short to be searched for on their own (a 1-5 character password, a 1-2 letter user name)
are replaced in their context only (``DB_PASSWORD=<SECRET_1>``, ``/home/<USER_1>``).
Generic accounts (``root``, ``ubuntu``, ``admin`` ...) are not user names. A token-class
original that a rule finds where whole-token matching skips it (glued to a word) is,
once the settling rescan finds it again, replaced wherever it occurs.

Data. A run of ``BLOB_CHARS`` token characters or more (an image or a file as base64, a
hex dump) is a secret as a whole when it is random, and the rules read the text without it:
nothing else they look for is made of one such run, and their patterns are slow on megabytes
of it.

Settling and verification. After replacing, the rules are run on the output; what they
find there (a context that only the replacement brought together, a value the discovery
text did not hold) is added and replaced, a few rounds at most. :meth:`Redactor.verify`
then requires that no original (in any view) and no rule finding remain. A redactor
remembers the lines a scan found clean (by hash, scanned with ``CONTEXT_LINES`` lines of
context): the rules are deterministic, so such a line is not scanned again, and a text is
scanned only where it differs from what was already verified (a replaced line, a line
rendered or joined anew); a line repeated in a text is scanned once, and small blocks are
scanned together. The records of a transcript are verified as written by
:meth:`Redactor.object_survivors` (every rule on every key and value, a short value also
beside the key that names it) and :meth:`Redactor.originals_in` (no original in the JSON
written). The report holds counts and placeholders only, never the originals.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Mapping
from urllib.parse import quote, quote_plus, unquote_plus

from ..errors import RedactionLeak
from . import addresses, identities, network, numbers, passwords, secrets
from .secret_names import key_is_secret, key_words, value_is_secret
from .text import PLACEHOLDER, Span, high_entropy, lower

GENERIC_USERS = frozenset({
    "root", "ubuntu", "user", "users", "runner", "admin", "administrator", "ec2-user", "vscode",
    "codespace", "codespaces", "node", "shared", "public", "guest", "default", "debian", "centos",
    "fedora", "pi", "app", "www-data", "git", "postgres", "mysql", "redis", "nobody", "daemon",
    "jenkins", "docker", "dev", "developer", "test", "tmp", "temp", "home", "me", "you", "username",
    "yourname", "your-name", "your_username", "name", "workspace", "project", "projects", "oauth2",
    "x-access-token", "x-token-auth", "token", "anonymous", "localuser", "vagrant", "coder", "api",
    "all users", "all", "wsl", "wsl$", "wsl.localhost"})
CASELESS = frozenset({"USER", "PERSON", "HOST", "PROJECT", "EMAIL", "PORT", "IBAN", "MAC", "ADDRESS"})
TOKEN_CLASSES = frozenset({"USER", "PERSON", "HOST", "PROJECT", "ACCOUNT", "SSN", "ADDRESS"})  # whole tokens
SHORT_SECRET = 12  # secrets shorter than this are replaced as whole tokens
MIN_GLOBAL = {"SECRET": secrets.MIN_SECRET, "USER": 3}  # shorter values: replaced in their context only
SETTLE_ROUNDS = 3  # replace, rescan, replace again ...: at most this many rescans

Finding = tuple[str, str]  # (class, value)
_FINDERS: tuple[Callable[[str, str], Iterator[Finding]], ...] = (
    numbers.find, secrets.find, identities.find, network.find, addresses.find)
_CONTEXT_RULES: tuple[Callable[[str, str], Iterator[Span]], ...] = (passwords.context, identities.context)
_DERIVED: tuple[Callable[[str, str], Iterator[Finding]], ...] = (passwords.find,)  # after the contexts they derive from

_PREFIX = 10  # characters of each original in the search index
_TOKEN = re.compile(r"[A-Za-z0-9_]")
_ESCAPE = re.compile(r"\\(?:([\"\\/nrt'])|u([0-9a-fA-F]{4}))")
_UNESCAPED = {"n": "\n", "r": "\r", "t": "\t"}
ESCAPE_LEVELS = 4  # a JSON document in a JSON string in a tool input, in a record, in a rendered tool call
# from the start of a run only: tried at every position, a long run without %XX is quadratic
_PERCENT_RUN = re.compile(r"(?<![^\s\"'<>\\`])[^\s\"'<>\\`]*%[0-9A-Fa-f]{2}[^\s\"'<>\\`]*")
_HOST_THEN_PORT = re.compile(r"(<HOST_\d+>):(\d{2,5})\b")
_LOCALHOST_PORT = re.compile(r"(?<![\w.-])(localhost):(\d{2,5})\b")
CONTEXT_LINES = 4  # lines of context scanned around a line not yet found clean (and block overlap)
_LINE_BREAKS = re.compile(r"\n|(?<!\\)\\n")  # a line break, or a JSON string's escaped one
BLOCK_CHARS = 1 << 16  # characters scanned at a time
CLEAN_LINES = 1 << 20  # lines remembered as clean (by hash), per redactor
PAIR_CHARS = 256  # a string value up to this long is also read beside its key (see _pairs)
BLOB_CHARS = 2048  # a run of token characters this long is data (see _blob)
_BLOB = re.compile(r"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9_+/=-]{%d,}" % BLOB_CHARS)
_NEEDS_JSON_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f-\U0010ffff]')
_PAIR_WORDS = frozenset({"host", "hostname", "server", "addr", "address", "endpoint", "name", "user", "username",
                         "login", "author", "email", "mail", "owner", "account"})


def _contextual(text: str, low: str | None = None) -> Iterator[Span]:
    """(start, end, class, value) of every value a context rule marks."""
    low = lower(text) if low is None else low
    for rule in _CONTEXT_RULES:
        yield from rule(text, low)


def _unescaped(text: str) -> str:
    """``text`` with JSON / shell string escapes resolved (``\\n`` -> newline, ``\\"`` -> ``"``)."""
    return _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(1)) if m.group(1) else _char(m.group(2)), text)


def _char(hex4: str) -> str:
    code = int(hex4, 16)
    return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)  # a lone surrogate half: no character


def _views(text: str, escapes: bool = True) -> list[str]:
    """``text``, its escaped lines resolved up to ``ESCAPE_LEVELS`` times (unless not
    ``escapes``), its percent-encoded runs decoded (also when encoded twice)."""
    views = [text]
    for mark, decode, levels in (("\\", _unescaped, ESCAPE_LEVELS), ("%", _percent_decoded, 2)):
        if mark not in text or (mark == "\\" and not escapes):
            continue
        lines = [line for line in text.split("\n") if mark in line]
        for _ in range(levels):  # each level: the lines that decoding changes, decoded once more
            changed = [new for new, line in ((decode(line), line) for line in lines) if new != line]
            if not changed:
                break
            views.append("\n".join(changed))
            lines = [line for line in changed if mark in line]
    return views


def _percent_decoded(line: str) -> str:
    """``line`` with its percent-encoded runs decoded in place (their contexts stay)."""
    return _PERCENT_RUN.sub(lambda m: unquote_plus(m.group(0)), line)


def _rules(view: str) -> dict[tuple[str, str], bool]:
    """{(class, value): from a context rule} of every rule run on ``view``, filtered as
    discovery records them; context findings longest first (/Users/j.doe and its alias
    j-doe before the "j" of -Users-j-doe-proj)."""
    found: dict[tuple[str, str], bool] = {}
    if len(view) > BLOB_CHARS:
        view = _BLOB.sub(lambda m: _blob(m.group(0), found), view)
    low = lower(view)
    for finder in _FINDERS:
        for cls, value in finder(view, low):
            value = value.strip() if cls != "SSH_KEY" else value
            if cls != "SSH_KEY" and cls != "PORT" and len(value) < MIN_GLOBAL.get(cls, 1):
                continue  # too short to search for on its own: only context rules place it
            if _keep(cls, value):
                found.setdefault((cls, value), False)
    for _, _, cls, value in sorted(_contextual(view, low), key=lambda c: -len(c[3])):
        if _keep(cls, value.strip()):
            found.setdefault((cls, value), True)
    for derive in _DERIVED:
        for cls, value in derive(view, low):
            if len(value) >= MIN_GLOBAL.get(cls, 1) and _keep(cls, value):
                found.setdefault((cls, value), False)
    return found


def _blob(run: str, found: dict[tuple[str, str], bool]) -> str:
    """A run of ``BLOB_CHARS`` token characters or more (an image or a file as base64, a
    hex dump) is data: random, it is a secret as a whole (the ``_LONG_TOKEN`` rule of
    :mod:`~.secrets`), and the other rules read the text without it — nothing they look for
    is made of one such run, and their patterns are slow on megabytes of it."""
    if high_entropy(run):
        found.setdefault(("SECRET", run), False)
    return ""


def _escaped_forms(original: str) -> list[str]:
    """How an original holding newlines, quotes, backslashes or non-ASCII letters reads inside
    JSON strings, escaped once and up to ``ESCAPE_LEVELS`` times (non-ASCII kept or ``\u00df``)."""
    forms = set()
    for ensure_ascii in (False, True):
        form = original
        for _ in range(ESCAPE_LEVELS):
            form = json.dumps(form, ensure_ascii=ensure_ascii)[1:-1]
            forms.add(form)
    forms.discard(original)
    return sorted(forms)


def _encoded_forms(original: str) -> list[str]:
    """How an original reads percent-encoded (``jane%40x.org``, ``Jane+Doe``), and unescaped."""
    forms = {quote(original, safe=""), quote_plus(original), quote(original, safe="/:")}
    if "\\" in original:
        forms.add(_unescaped(original))
    return [f for f in forms if f != original]


def _keep(cls: str, value: str) -> bool:
    """A finding worth recording: not a placeholder, not a generic account."""
    if not value or PLACEHOLDER.search(value):
        return False
    if cls == "USER" and (value.lower() in GENERIC_USERS or value.isdigit()):
        return False
    return True


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
        # normalised original -> (class, placeholder, searched on its own)
        self._originals: dict[str, tuple[str, str, bool]] = {}
        self._per_class: Counter = Counter()
        self._replacements: Counter = Counter()
        self._pattern: re.Pattern | None = None
        self._clean_lines: set[int] = set()  # hashes of lines a scan found clean, with their context
        self._in_object = False  # apply_object settles over all of an object's strings at once
        self._anywhere: set[str] = set()  # token-class originals a rule found glued to a word
        for cls, values in (extra or {}).items():
            for v in values:
                if v:
                    self._add(cls.upper(), v)

    # -- discovery --------------------------------------------------------------------
    def _key(self, cls: str, original: str) -> str:
        return original.lower() if cls in CASELESS else original

    def _lookup(self, found: str) -> tuple[str, str, bool] | None:
        return self._originals.get(found) or self._originals.get(found.lower())

    def _add(self, cls: str, original: str, placeholder: str | None = None, alias_of: str | None = None) -> None:
        """Record ``original`` (with ``placeholder``, for the aliases of an original)."""
        original = original.strip() if cls != "SSH_KEY" else original
        key = self._key(cls, original)
        if not original or key in self._originals or PLACEHOLDER.fullmatch(original) \
                or (original.startswith("<") and PLACEHOLDER.match(original)):
            return
        searched = len(original) >= MIN_GLOBAL.get(cls, 1)
        if placeholder is None:
            self._per_class[cls] += 1
            placeholder = f"<{cls}_{self._per_class[cls]}>"
        self._originals[key] = (cls, placeholder, searched)
        self._pattern = None
        if alias_of is not None or not searched or cls == "PORT":
            return
        aliases = numbers.aliases(cls, original)
        if _NEEDS_JSON_ESCAPE.search(original):  # JSON writes any other string as it is
            aliases += _escaped_forms(original)
        if 4 <= len(original) < BLOB_CHARS:
            aliases += _encoded_forms(original)
        if cls == "USER" and re.search(r"[._ ]", original):
            # Claude Code project folders spell /Users/j.doe/x as -Users-j-doe-x
            aliases.append(re.sub(r"[._ ]", "-", original))
        for alias in aliases:
            self._add(cls, alias, placeholder, alias_of=original)

    def discover(self, text: str) -> None:
        """Find the sensitive strings of ``text``, also inside JSON-escaped strings within it
        (a tool call's arguments), where ``\\n`` glues a letter to the next word, and in its
        percent-encoded runs."""
        for cls, value, _ in self._scan(text):
            self._add(cls, value)

    def _scan(self, text: str) -> list[tuple[str, str, bool]]:
        """(class, value, from a context rule) of every finding of every rule in every view
        of ``text``, as discovery records them. Lines already found clean (with their
        context) are not scanned again: see :meth:`_unverified`. Small blocks, of one view or
        of several, are scanned together (up to ``BLOCK_CHARS``): each scan has a fixed cost."""
        found: dict[tuple[str, str], bool] = {}
        blocks: list[str] = []
        fresh: list[str] = []
        size = 0

        def scan() -> None:
            block_found = _rules("\n".join(blocks))
            for key, ctx in block_found.items():
                found.setdefault(key, ctx)
            self._mark_clean(fresh, block_found)

        for view in _views(text):
            for block, block_fresh in self._unverified(view):
                if blocks and size + len(block) > BLOCK_CHARS:
                    scan()
                    blocks, fresh, size = [], [], 0
                blocks.append(block)
                fresh += block_fresh
                size += len(block) + 1
        if blocks:
            scan()
        return [(cls, value, ctx) for (cls, value), ctx in found.items()]

    def _unverified(self, view: str) -> Iterator[tuple[str, list[str]]]:
        """(block, its fresh lines): the lines of ``view`` not yet found clean (each once: a
        tool's output repeated in a record is scanned once), each with
        ``CONTEXT_LINES`` lines of context either side, gathered in blocks of about
        ``BLOCK_CHARS``. A literal ``\\n`` (a JSON string's line break) ends a line too, so
        that a line of a record's JSON is the line its decoded string held."""
        lines = _LINE_BREAKS.split(view)
        clean = self._clean_lines
        fresh, seen = [], set()
        for i, line in enumerate(lines):
            h = hash(line)
            if h in clean or h in seen:
                continue  # found clean before, or scanned once in this view already
            seen.add(h)
            # a line whose JSON-unescaped form was found clean is clean: escapes hide, never reveal
            if "\\" not in line or hash(_unescaped(line)) not in clean:
                fresh.append(i)
        if not fresh:
            return
        if len(fresh) == len(lines) and len(view) <= BLOCK_CHARS:
            yield "\n".join(lines), lines
            return
        start, end, size, members = -1, -1, 0, []
        for i in fresh:
            lo, hi = max(0, i - CONTEXT_LINES), min(len(lines), i + CONTEXT_LINES + 1)
            if members and lo <= end and size < BLOCK_CHARS:
                size += sum(len(lines[j]) + 1 for j in range(end, hi))
                end = max(end, hi)
                members.append(i)
                continue
            if members:
                yield "\n".join(lines[start:end]), [lines[j] for j in members]
            start, end, members = lo, hi, [i]
            size = sum(len(lines[j]) + 1 for j in range(lo, hi))
        yield "\n".join(lines[start:end]), [lines[j] for j in members]

    def _mark_clean(self, fresh: list[str], block_found: dict[tuple[str, str], bool]) -> None:
        """Remember the fresh lines of a scanned block that hold none of its findings."""
        if len(self._clean_lines) > CLEAN_LINES:
            self._clean_lines.clear()  # a bound on memory: those lines are scanned again
        pieces = {piece for _, value in block_found for piece in value.lower().split("\n") if piece.strip()}
        for line in fresh:
            if pieces:
                low = line.lower()
                if any(piece in low for piece in pieces):
                    continue
            self._clean_lines.add(hash(line))

    # -- replacement ------------------------------------------------------------------
    # Originals are found through an index of their first characters (lower case): one
    # regex of short prefixes finds candidate positions in the lowered text, and each
    # candidate is checked in full (case, token boundaries) — a regex of every original
    # would take seconds to compile when a transcript holds thousands of long tokens.
    def _compiled(self) -> re.Pattern:
        if self._pattern is None:
            index: dict[str, list[str]] = {}
            context_only = []
            for key, (cls, _, searched) in self._originals.items():
                if cls != "PORT" and searched:  # ports: see _port_sub; short values: context only
                    index.setdefault(key[:_PREFIX].lower(), []).append(key)
                elif cls != "PORT":
                    context_only.append(key)
            self._context_only = tuple(context_only)
            for keys in index.values():
                keys.sort(key=len, reverse=True)
            self._index = index
            self._prefix_lengths = sorted({len(p) for p in index}, reverse=True)
            self._pattern = re.compile(_trie_pattern(index)) if index else re.compile(r"(?!x)x")
        return self._pattern

    def _matches(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, key) of every original in ``text``, left to right, not overlapping.

        The longest original at a position wins; an original that starts inside it and
        runs past its end widens the span (two overlapping originals are replaced as one:
        no tail of the second is left behind)."""
        if not self._originals:
            return
        pattern = self._compiled()
        low = lower(text)
        i = 0
        while True:
            m = pattern.search(low, i)
            if m is None:
                return
            p = m.start()
            key = self._key_at(text, low, p)
            if key is None:
                i = p + 1
                continue
            end = p + len(key)
            q = p + 1
            while q < end:  # originals starting inside the span
                m = pattern.search(low, q, end + _PREFIX)  # an index prefix may run past the end
                if m is None or m.start() >= end:
                    break
                inner = self._key_at(text, low, m.start())
                if inner is not None:
                    end = max(end, m.start() + len(inner))
                q = m.start() + 1
            yield p, end, key
            i = end

    def _key_at(self, text: str, low: str, p: int) -> str | None:
        """The longest original at position ``p`` of ``text``, or None."""
        n = len(text)
        for length in self._prefix_lengths:
            for key in self._index.get(low[p:p + length], ()):
                end = p + len(key)
                cls = self._originals[key][0]
                if (low[p:end] == key if cls in CASELESS else text.startswith(key, p)) \
                        and (key in self._anywhere or _bounded(cls, key, text, p, end, n)):
                    return key
        return None

    def apply(self, text: str) -> str:
        """``text`` with every original replaced, settled (see the module doc)."""
        out = self._replace(text)
        if self._in_object:
            return out
        for _ in range(SETTLE_ROUNDS):
            found = self._scan(out)
            if not found:
                return out
            self._settle(found)
            out = self._replace(out)
        return out  # still not clean: verify() reports it

    def _settle(self, found: list[tuple[str, str, bool]]) -> None:
        """Record what a rescan of an output found. A token-class original found again
        (a rule saw it glued to a word, where whole-token replacement skips it) is
        replaced anywhere from now on."""
        for cls, value, _ in found:
            key = self._key(cls, value.strip())
            if key in self._originals and self._originals[key][2]:
                self._anywhere.add(key)
            self._add(cls, value)

    def _replace(self, text: str) -> str:
        if self._holds_original(text):
            text = self._replace_originals(text)
        # ports of redacted host:port pairs: "<HOST_1>:8080" -> "<HOST_1>:<PORT_1>"
        if "PORT" in self._per_class and ":" in text:
            text = _HOST_THEN_PORT.sub(self._port_sub, text)
            text = _LOCALHOST_PORT.sub(self._port_sub, text)
        if "%" in text:
            text = _PERCENT_RUN.sub(self._percent_sub, text)
        return text

    def _holds_original(self, text: str) -> bool:
        """Can ``text`` hold an original? One that is searched for starts with an index
        prefix; one replaced in its context only (``DB_PASSWORD=x``) is in it as written.
        Most strings of a transcript hold none, and skip the context rules."""
        if not self._originals:
            return False
        low = lower(text)
        if self._compiled().search(low) is not None:
            return True
        return any(key in text or key in low for key in self._context_only)

    def _replace_originals(self, text: str) -> str:
        out = self._apply_contextual(text)  # first, while every context is intact
        pieces, pos = [], 0
        for p, end, key in self._matches(out):
            cls, placeholder, _ = self._originals[key]
            pieces += (out[pos:p], placeholder)
            self._replacements[cls] += 1
            pos = end
        if pieces:
            out = "".join(pieces) + out[pos:]
        return out

    def _percent_sub(self, m: re.Match) -> str:
        """A percent-encoded run whose decoded text holds an original: decoded, redacted,
        encoded again (a short password in URL-encoded JSON, a name glued to ``%40``)."""
        run = m.group(0)
        decoded = unquote_plus(run)
        if decoded == run:
            return run
        redacted = self._replace(decoded)
        if redacted == decoded:
            return run
        # characters the run held unencoded stay so; placeholders stay readable
        safe = "".join(sorted({c for c in run if not c.isalnum() and c != "%"} | set("<>_")))
        return quote(redacted, safe=safe)

    def _apply_contextual(self, text: str) -> str:
        for _ in range(4):  # a replacement can expose a context it overlapped
            pieces, pos = [], 0
            for start, end, cls, value in sorted(_contextual(text)):
                entry = self._lookup(value.strip())
                if entry is None or start < pos or self._longer_original_at(text, start, end):
                    continue
                pieces.append(text[pos:start])
                pieces.append(entry[1])
                self._replacements[entry[0]] += 1
                pos = end
            if not pieces:
                return text
            pieces.append(text[pos:])
            text = "".join(pieces)
        return text

    def _longer_original_at(self, text: str, start: int, end: int) -> bool:
        """A searched original starts here and runs past ``end`` (-Users-j-doe-proj: j-doe, not j)."""
        self._compiled()
        low = text[start:start + max(self._prefix_lengths, default=0)].lower()
        return any(len(key) > end - start and text[start:start + len(key)].lower() == key.lower()
                   for length in self._prefix_lengths for key in self._index.get(low[:length], ()))

    def _port_sub(self, m: re.Match) -> str:
        host = m.group(1)
        if host.startswith("<"):
            host = next((o for o, (c, p, _) in self._originals.items() if p == host and c == "HOST"), None)
        entry = self._lookup(f"{host}:{m.group(2)}") if host else None
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
        """Classes of what remains in ``text``: each original still there (as written,
        unescaped or percent-decoded), and each value any rule finds in it (one entry per
        distinct string)."""
        found = self._originals_in(text)
        for cls, value, _ in self._scan(text):
            found.setdefault(self._key(cls, value), cls)
        return list(found.values())

    def originals_in(self, text: str) -> list[str]:
        """Classes of the originals still in ``text``, the JSON that records whose every key
        and value :meth:`object_survivors` has verified are written as: searched as written
        (where an original's JSON-escaped forms are among its aliases) and percent-decoded,
        without running the rules again."""
        return list(self._originals_in(text, json_escaped=True).values())

    def _originals_in(self, text: str, json_escaped: bool = False) -> dict[str, str]:
        views = _views(text, escapes=not json_escaped)
        found = {key: self._originals[key][0] for view in views for _, _, key in self._matches(view)}
        if "PORT" in self._per_class:
            for rx in (_HOST_THEN_PORT, _LOCALHOST_PORT):
                for m in rx.finditer(text):
                    if self._port_sub(m) != m.group(0):
                        found.setdefault(m.group(0), "PORT")
        return found

    def verify(self, text: str, where: str = "") -> None:
        """Raise :class:`RedactionLeak` if any original, or any rule finding, is in ``text``."""
        found = self.survivors(text)
        if found:
            raise RedactionLeak(found, where)

    def report(self) -> RedactionReport:
        return RedactionReport(dict(self._per_class), dict(self._replacements))

    # -- JSON objects (transcript records) --------------------------------------------
    def discover_object(self, obj) -> None:
        """Discover in every key and string value of ``obj`` (nested dicts and lists).

        A string under a key that names a secret (``{"DB_PASSWORD": "x"}``) is a secret
        whatever its length."""
        texts: list[str] = []
        for key, value in _pairs(obj, texts):
            if key_is_secret(key) and value_is_secret(value.strip(), key, "", True, False):
                self._add("SECRET", value)
        self.discover("\n".join(texts))

    def apply_object(self, obj):
        """``obj`` with keys and string values replaced, settled over all its strings at
        once; keys that become equal get ``~2``, ``~3``."""
        out = self._replace_object(obj)
        for _ in range(SETTLE_ROUNDS):
            texts: list[str] = []
            pairs = list(_pairs(out, texts))
            found = self._scan("\n".join(texts))
            found += [("SECRET", v, True) for k, v in pairs
                      if key_is_secret(k) and value_is_secret(v.strip(), k, "", True, False) and _keep("SECRET", v)]
            if not found:
                return out
            self._settle(found)
            out = self._replace_object(out)
        return out

    def _replace_object(self, obj):
        self._in_object = True
        try:
            return self._replace_values(obj)
        finally:
            self._in_object = False

    def _replace_values(self, obj):
        if isinstance(obj, str):
            return self.apply(obj)
        if isinstance(obj, list):
            return [self._replace_values(v) for v in obj]
        if not isinstance(obj, dict):
            return obj
        out = {}
        for k, v in obj.items():
            new_k = self.apply(k) if isinstance(k, str) else k
            base, n = new_k, 2
            while new_k in out:
                new_k, n = f"{base}~{n}", n + 1
            entry = self._lookup(v.strip()) if isinstance(v, str) and isinstance(k, str) and key_is_secret(k) else None
            if entry is not None:
                out[new_k] = entry[1]
                self._replacements[entry[0]] += 1
            else:
                out[new_k] = self._replace_values(v)
        return out

    def object_survivors(self, obj) -> list[str]:
        """:meth:`survivors` over every key and string value of ``obj``."""
        texts: list[str] = []
        found = []
        for key, value in _pairs(obj, texts):
            entry = self._lookup(value.strip())
            if entry is not None and not entry[2] and key_is_secret(key):
                found.append(entry[0])
        return found + self.survivors("\n".join(texts))


def _pairs(obj, texts: list[str]) -> Iterator[tuple[str, str]]:
    """(key, string value) of every dict entry in ``obj``; every key and string into
    ``texts``, and ``key: value`` where the key says what a short value is (a host, a
    name, a secret: ``{"host": "pg-7"}``), so that the rules read the two together."""
    if isinstance(obj, str):
        texts.append(obj)
    elif isinstance(obj, list):
        for v in obj:
            yield from _pairs(v, texts)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str):
                texts.append(k)
                if isinstance(v, str):
                    if len(v) <= PAIR_CHARS and "\n" not in v and _pair_key(k):
                        texts.append(f"{k}: {v}")
                    yield k, v
            yield from _pairs(v, texts)


@lru_cache(maxsize=1 << 14)  # a transcript's records repeat their keys
def _pair_key(key: str) -> bool:
    words = key_words(key)
    return bool(words) and (words[-1] in _PAIR_WORDS or key_is_secret(key))


def _trie_pattern(words: Iterable[str]) -> str:
    """One regex for many literal words, factored by common prefix (``ab[cd]|xyz``):
    a flat alternation of thousands of words tries each of them at every position."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        alts, leaves = [], []
        for ch in sorted(k for k in node if k):
            sub = build(node[ch])
            (alts.append(re.escape(ch) + sub) if sub else leaves.append(re.escape(ch)))
        if leaves:
            alts.append(leaves[0] if len(leaves) == 1 else "[" + "".join(leaves) + "]")
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


def _bounded(cls: str, original: str, text: str, start: int, end: int, n: int) -> bool:
    """Token classes and short secrets match whole tokens only (``tom`` not in ``tomato``)."""
    if cls not in TOKEN_CLASSES and not (cls == "SECRET" and len(original) < SHORT_SECRET):
        return True
    if start > 0 and _TOKEN.match(original[0]) and _TOKEN.match(text[start - 1]) \
            and not (start >= 2 and text[start - 2] == "\\" and text[start - 1] in "nrt"):
        return False  # (after a literal \n the next word starts)
    return not (end < n and _TOKEN.match(original[-1]) and _TOKEN.match(text[end]))


def redact(text: str, redactor: Redactor | None = None) -> tuple[str, RedactionReport]:
    """Redact one text (a fresh redactor unless one is given); verify; report."""
    r = redactor or Redactor()
    out = r.redact(text)
    return out, r.report()
