"""Passwords, cookies and credentials known by their context, not by their shape.

``context(text, low)`` yields ``(start, end, class, value)`` spans; ``find(text, low)``
yields ``(class, value)`` strings derived from a context (a base64 form, a decoded one)
that are searched for everywhere. Rules:

=====================  ==============================================================
rule                   marks
=====================  ==============================================================
assignment             the value of a key that names a secret (see ``secret_names``):
                       ``DB_PASSWORD=x``, ``password: hunter2``, ``"apiToken": "..."``,
                       ``--password x``, ``my password is x``; quoted values may hold
                       escaped quotes (``"pa\\"ss"``)
URL credentials        ``scheme://user:password@host``, ``https://TOKEN@host``
authorization header   ``Authorization: Basic/Bearer/token ...``, ``x-api-key:``, a bare
                       ``Bearer x``; a Basic value is also decoded: its password and
                       ``user:password`` are searched for everywhere
command lines          ``mysql -pPASS``, ``sshpass -p``, ``docker login -p``, ``curl -u user:pass``,
                       ``redis-cli -a``, ``sqlcmd -P``, ``ldapsearch -w``, ``mongosh -p``,
                       ``htpasswd -b f u p``, ``openssl -passin pass:x``, ``smbclient -U u%p``
auth tuples / calls    ``auth=("user", "pw")``, ``HTTPBasicAuth("u", "pw")``,
                       ``smtp.login("u", "pw")``, ``NetworkCredential("u", "pw")``
.netrc entries         ``machine h login u password p`` (``default`` too), on one line or
                       several, its tokens in any order
XML, call arguments    ``<password>x</password>``, ``<add key="DbPassword" value="x"/>``,
                       ``define('DB_PASSWORD', 'x')``, ``setenv("API_TOKEN", "x")``
.pgpass lines          ``host:port:database:user:password`` (``\\:`` in a field)
YAML block scalars     the lines of ``password: |`` / ``secret: >-`` blocks
echo | base64          the plaintext of ``echo -n 'x' | base64`` / ``printf x | base64``
                       / ``base64 <<< x`` (its base64 forms searched everywhere), and the
                       input and output of ``echo x | base64 -d``
cookies, sessions      every value of ``Cookie:`` / ``Set-Cookie:`` (not attributes such as
                       ``Path``), ``curl -b`` / ``--cookie`` pairs, ``sessionid=``,
                       ``;jsessionid=``, ``PHPSESSID=``, ``csrftoken=`` ...
=====================  ==============================================================

The line-anchored rules (``.netrc``, ``.pgpass``, YAML blocks) read a file's body also
where a tool call writes or shows it: an ``apply_patch`` diff (``+`` lines), a numbered
listing, a JSON string (the gutters of :data:`~.text.GUTTER`); heredocs and editor inputs
hold it as the file does.

User names met on the way (``curl -u alice:x``) are marked ``USER``; the redactor drops
generic accounts (``root``, ``admin``).
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Iterator

from .secret_names import CODE_WORDS, KEY_CHARS, key_is_secret, value_is_secret
from .text import LINE_BODY, PLACEHOLDER, Span, at_line_starts, gutter_at, high_entropy, walk_back

# Some rule needs one of these (lowered text); most short strings hold none.
_TRIGGER = re.compile(r"pass|pwd|secret|token|key|credential|cookie|signature|webhook|://|bearer|sess|sid"
                      r"|authorization|x-api-key|mysql|mariadb|-u|--user|auth|login|base64|:(?:\d{1,5}|\*):"
                      r"|[:|>][+-]?\d?[ \t]*(?:\n|\\n)"
                      r"|passwort|motdepasse|mot_de_passe|redis-cli|sqlcmd|ldap|mongo|htpasswd|smbclient")
_SECRET_WORD = re.compile(r"pass|pwd|secret|token|key|credential|cookie|signature|webhook|sessid|sessionid"
                          r"|motdepasse|mot_de_passe")
# key, separator, then a quoted value (escapes allowed inside plain quotes) or a bare one
_VALUE = re.compile(r"(?:\\*[\"']|\])?[ \t]*(?P<sep>:=|=>|={1,3}|!==?|:|[ \t]is[ \t])[ \t]*"
                    r"(?:\"(?P<dq>(?:[^\"\n\\]|\\[^\n]){0,512})\"|'(?P<sq>(?:[^'\n\\]|\\[^\n]){0,512})'"
                    r"|`(?P<bq>[^`\n\\]{0,512})`"
                    r"|(?P<eq>\\+[\"'])(?P<equoted>[^\"'`\n\\]{0,512})(?P=eq)"
                    r"|(?P<bare>[^\s\"'`,;(){}\[\]<>\\|&]{1,512}))")
_FLAG_VALUE = re.compile(r"(?:[ \t]+|=)(?:(?P<q>[\"'])(?P<quoted>[^\"'\n\\]{0,512})(?P=q)"
                         r"|(?P<bare>[^\s\"'`,;(){}\[\]<>\\|&-][^\s\"'`,;(){}\[\]<>\\|&]{0,511}))")
# a quoted key, a comma, a quoted value without spaces: the arguments of define / setenv / putenv
_PAIR_VALUE = re.compile(r"\\*[\"'][ \t]*,[ \t]*(?:\"(?P<dq>[^\"\s\\]{1,256})\"|'(?P<sq>[^'\s\\]{1,256})'"
                         r"|(?P<eq>\\+[\"'])(?P<equoted>[^\"'\s\\]{1,256})(?P=eq))")
# <password>x</password> (Maven, NuGet ...), <add key="DbPassword" value="x" />
_XML_VALUE = re.compile(r"<(?P<key>[A-Za-z_][\w.:-]{0,64})>(?P<value>[^<>\n]{1,512})</(?P=key)>"
                        r"|\bkey=(?P<q>\\*[\"'])(?P<key2>[\w.:-]{1,64})(?P=q)[ \t]+value=(?P=q)(?P<value2>[^\"'<>\n\\]{1,512})(?P=q)")
_QUOTED_GROUPS = ("dq", "sq", "bq", "equoted", "quoted")
_URL_CREDENTIALS = re.compile(r"(?<=[a-zA-Z0-9])://(?P<user><[A-Z_]+_\d+>|[^:@/\s\"'<>\\]*)(?::(?P<secret>[^/\s\"'<>\\]+))?@"
                              r"(?=[\w\[<])")
_AUTH_HEADER = re.compile(r"(?:authorization\"?\s*[:=]\s*\"?(?P<scheme>basic|bearer|token|digest|bot|apikey)"  # lowered
                          r"|bearer|x-api-key\s*:)\s+(?P<secret>[a-z0-9._~+/=:-]{4,})")
_CURL_USER = re.compile(r"(?:\s-u\s*|--user[\s=]+)[\"']?(?P<user>[^:\s\"']+):(?P<secret>[^\s\"']+)")
_CLI_PASSWORD = re.compile(r"(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?P<secret>[^\s\"'\\]+)"
                           r"|(?:sshpass|(?:docker|podman|helm|oras) login)\b[^\n]*?\s-p[ \t]+[\"']?(?P<secret2>[^\s\"'\\]+)"
                           r"|(?:redis-cli\b[^\n]*?\s-a|sqlcmd\b[^\n]*?\s-P|ldap(?:search|add|modify|delete|passwd)\b[^\n]*?\s-w"
                           r"|mongo(?:sh)?\b[^\n]*?\s-p|htpasswd\s+-b\S*\s+\S+\s+\S+)[ \t]+[\"']?(?P<secret4>[^\s\"'\\]+)"
                           r"|-pass(?:in|out)?[ \t]+pass:(?P<secret5>[^\s\"'\\]+)"
                           r"|smbclient\b[^\n]*?\s-U[ \t]*[\"']?[^%\s\"']+%(?P<secret6>[^\s\"'\\]+)")
_CLI_WORDS = ("mysql", "mariadb", "sshpass", " login", "redis-cli", "sqlcmd", "ldap", "mongo", "htpasswd",
              "-pass", "smbclient")
_SECRET_GROUPS = ("secret", "secret2", "secret4", "secret5", "secret6")
_AUTH_CALL = re.compile(
    r"(?:\b(?:auth|basic_auth|http_auth|proxy_auth|credentials|creds)\s*[=:]\s*[(\[]"
    r"|\b(?:HTTPBasicAuth|HTTPDigestAuth|HTTPProxyAuth|BasicAuth|DigestAuth|NetworkCredential|PasswordAuthentication"
    r"|UsernamePasswordCredentials|UsernamePasswordAuthenticationToken|PasswordCredential|Credentials)\s*\("
    r"|\.(?:login|auth|authenticate|set_credentials|basic_auth|with_basic_auth|simple_bind_s|bind)\s*\()"
    r"\s*(?:\w+\s*=\s*)?(?P<q1>\\*[\"'])(?P<user>[^\"'\\\n]{0,128})(?P=q1)\s*,\s*"
    r"(?:\w+\s*=\s*)?(?P<q2>\\*[\"'])(?P<secret>[^\"'\\\n]{1,256})(?P=q2)")
# cheap necessary conditions of the rules below
_AUTH_CALL_GATE = re.compile(r"auth|cred|login|bind")  # lowered
_PGPASS_GATE = re.compile(r":(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:")
_YAML_GATE = re.compile(r":[ \t]*[|>][+-]?\d?[ \t]*(?:\n|\\n)")
_PGPASS = re.compile(r"(?:^|(?<=[\s\"'>`=/+\u2192-])|(?<=\\[nt])|(?<=\\u2192))(?P<host>[A-Za-z0-9*][\w.*-]*):(?P<port>\d{1,5}|\*)"
                     r":(?P<db>[\w.*$-]+):(?P<user>[\w.*@$-]+):(?P<secret>(?:[^\s:\"'\\`]|\\+:)+)(?=$|[\s\"'`]|\\+[nrt\"])", re.M)
_YAML_BLOCK = re.compile(LINE_BODY + r"(?P<sp>[ \t]*)(?:- )?[\"']?(?P<key>[A-Za-z_][\w.-]*)[\"']?[ \t]*:"
                         r"[ \t]*[|>][+-]?\d?[ \t]*(?=\n|\\n)")
# the gutter a block's lines repeat after its key line's (a listing's, quote marks; a diff's:
# as many of + - or space as the key line's)
_LINE_GUTTERS = {">": re.compile(r"(?:>[ \t]?)+"), "#": re.compile(r"[ \t]*\d{1,7}(?:\u2192|\t|\\u2192|\\t)")}
_NETRC = re.compile(r"(?:(?<![\w.])|(?<=\\[nt]))machine(?:\s|\\[nt])+(?P<host>[^\s\"'\\]+)(?=\s|\\[nrt]|$)"
                    r"|(?:^|(?<=\n)|(?<=\\n))[+>-]?[ \t]*default(?=\s|\\[nrt]|$)")  # default: a line of its own
_NETRC_TOKEN = re.compile(r"(?:\s|\\[nrt]|(?<=\n)[+>-]+|(?<=\\n)[+>-]+)+(?P<token>[^\s\"'\\]+)")
_NETRC_FIELDS = {"login": "USER", "password": "SECRET", "account": "USER"}
_ECHO_B64 = re.compile(
    r"(?:\b(?:echo(?:\s+-[neE]+)*|printf(?:\s+(?P<fq>[\"'])%s(?:\\\\?n)?(?P=fq))?)\s+"
    r"(?:(?P<q>\\*[\"'])(?P<quoted>[^\"'\n\\]{1,1024})(?P=q)|(?P<bare>[^\s|;&\"'\\<>]{1,1024}))"
    r"\s*\|\s*(?P<tool>base64|openssl\s+(?:base64|enc\s+-(?:base64|a))|b64enc)(?P<flags>(?:\s+-{1,2}[\w=-]+)*)"
    r"|\bbase64(?P<flags2>(?:\s+-{1,2}[\w=-]+)*)\s*<<<\s*(?:(?P<q2>\\*[\"'])(?P<quoted2>[^\"'\n\\]{1,1024})(?P=q2)"
    r"|(?P<bare2>[^\s|;&\"'\\<>]{1,1024})))")
_DECODE_FLAG = re.compile(r"\s-(?:d|D|-decode)\b")
_COOKIE_HEADER = re.compile(r"(?:\bset-cookie|\bcookie)\"?\s*:\s*\"?|(?:\s-b|--cookie)\s*[=\s]\s*[\"']?")  # lowered
_COOKIE_PAIR = re.compile(r"[ \t]*(?P<name>[^=;,\s\"'\\]{1,128})=(?P<value>[^;\s\"'\\,]*)[ \t]*(?:;|(?=[\s\"'\\,]|$))")
_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "secure", "httponly",
                                "priority", "partitioned", "version", "comment"})
# name=value of a session parameter: the name ends in one of these (lowered), and starts a
# parameter (after ; ? & a space or a quote, or a line's start)
_SESSION_NAME_END = re.compile(r"(?:sess(?:ion)?(?:[_.-]?id)?|sid|csrf[\w-]*|xsrf[\w-]*|remember[_-]token)=")
_SESSION_VALUE = re.compile(r"[^\s;&?#\"'<>\\,]{4,512}")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def context(text: str, low: str) -> Iterator[Span]:
    """(start, end, class, value) of every value a context rule of this module marks."""
    if not _TRIGGER.search(low):
        return
    for start, end, value in _assignments(text, low):
        yield start, end, "SECRET", value
    if "://" in text:
        yield from _url_credentials(text)
    for rx, words, where in ((_AUTH_HEADER, ("bearer", "authorization", "x-api-key"), low),
                             (_CLI_PASSWORD, _CLI_WORDS, text)):
        if any(w in low for w in words):
            for m in rx.finditer(where):
                group = next(g for g in _SECRET_GROUPS if m.groupdict().get(g))
                value = text[m.start(group):m.end(group)]
                if value.lower() not in CODE_WORDS and not PLACEHOLDER.fullmatch(value):
                    yield m.start(group), m.end(group), "SECRET", value
                user = m.groupdict().get("user")
                if user and not PLACEHOLDER.fullmatch(user):
                    yield m.start("user"), m.end("user"), "USER", user
    if "-u" in text or "--user" in text:
        for m in _CURL_USER.finditer(text):
            if m.group("user").isdigit() and m.group("secret").isdigit():
                continue  # docker -u 1000:1000
            yield m.start("user"), m.end("user"), "USER", m.group("user")
            if not PLACEHOLDER.fullmatch(m.group("secret")):
                yield m.start("secret"), m.end("secret"), "SECRET", m.group("secret")
    if ("(" in text or "[" in text) and _AUTH_CALL_GATE.search(low):
        yield from _auth_calls(text)
    if "machine" in low or "default" in low:
        yield from _netrc(text)
    if "</" in text or "value=" in low:
        for m in _XML_VALUE.finditer(text):
            key, group = (m.group("key"), "value") if m.group("key") else (m.group("key2"), "value2")
            value = m.group(group)
            if key_is_secret(key) and value_is_secret(value.strip(), key, "", True, False):
                yield m.start(group), m.end(group), "SECRET", value
    if ":" in text:
        if _PGPASS_GATE.search(text):
            yield from _pgpass(text)
        if _YAML_GATE.search(text):
            yield from _yaml_blocks(text)
    if "base64" in low or "b64enc" in low:
        for m, plain, _ in _echo_base64(text):
            yield m.start(plain), m.end(plain), "SECRET", m.group(plain)
    if "cookie" in low or "-b" in text:
        yield from _cookies(text, low)
    if any(w in low for w in ("sess", "sid", "csrf", "xsrf", "remember")):
        yield from _session_params(text, low)


def _session_params(text: str, low: str) -> Iterator[Span]:
    """The values of ``sessionid=`` / ``;jsessionid=`` / ``PHPSESSID=`` / ``csrftoken=`` ...
    (the name's end found first: a pattern starting with the name's run of characters is
    tried at every position)."""
    for m in _SESSION_NAME_END.finditer(low):
        start = walk_back(text, m.start(), _NAME_CHARS, 128)
        if start < 0 or not (start == 0 or text[start - 1] in ";?&\"'" or text[start - 1].isspace()):
            continue
        v = _SESSION_VALUE.match(text, m.end())
        if v is not None:
            value = v.group(0)
            if _literal(value) and (any(c.isdigit() for c in value) or len(value) >= 16):
                yield v.start(), v.end(), "SECRET", value


def find(text: str, low: str) -> Iterator[tuple[str, str]]:
    """Strings derived from a context, searched for everywhere: base64 forms of an encoded
    plaintext, the decoded parts of Basic credentials and of ``base64 -d`` inputs."""
    if "base64" in low or "b64enc" in low:
        for m, plain, decode in _echo_base64(text):
            value = m.group(plain)
            if decode:
                decoded = _b64decode(value)
                if decoded:
                    yield "SECRET", decoded
            else:
                for form in (value, value + "\n"):
                    encoded = base64.b64encode(form.encode()).decode()
                    yield "SECRET", encoded
                    yield "SECRET", encoded.rstrip("=")
    if "basic" in low:
        for m in _AUTH_HEADER.finditer(low):
            if m.group("scheme") == "basic":
                decoded = _b64decode(text[m.start("secret"):m.end("secret")])
                if decoded and ":" in decoded:
                    user, _, password = decoded.partition(":")
                    yield "SECRET", decoded
                    yield "SECRET", password
                    if user:
                        yield "USER", user


def _literal(value: str) -> bool:
    return bool(value) and not PLACEHOLDER.search(value) and value.lower() not in CODE_WORDS \
        and not value.startswith(("$", "{{", "%(", "<"))


def _b64decode(value: str) -> str | None:
    """``value`` decoded from (URL-safe) base64 as printable text, or None."""
    value = value.strip().rstrip("=")
    if len(value) < 4:
        return None
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), altchars=b"-_" if "-" in value or "_" in value else None,
                               validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    decoded = decoded.rstrip("\n")
    return decoded if decoded.isprintable() and decoded.strip() else None


def _assignments(text: str, low: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, value) of the values of secret-named keys."""
    n = len(text)
    last = -1
    for m in _SECRET_WORD.finditer(low):
        if m.start() < last:
            continue
        s, e = m.start(), m.end()
        while s > 0 and text[s - 1] in KEY_CHARS:
            s -= 1
        while e < n and text[e] in KEY_CHARS:
            e += 1
        if s > 0 and text[s - 1] == "\\" and text[s] in "nrt" and s + 1 < m.start() + 1:
            s += 1  # "\npassword: x" inside a JSON string: the n belongs to the escape
        last = e
        key = text[s:e].rstrip(".")
        if not key_is_secret(key):
            continue
        v = _VALUE.match(text, s + len(key))
        if v is None and key.startswith("-"):
            v = _FLAG_VALUE.match(text, s + len(key))
        if v is None and s > 0 and text[s - 1] in "\"'":
            v = _PAIR_VALUE.match(text, s + len(key))  # define('DB_PASSWORD', 'x'), setenv("TOKEN", "x")
        if v is None:
            continue
        group = next((g for g in _QUOTED_GROUPS if v.groupdict().get(g) is not None), "bare")
        quoted = group != "bare"
        if not quoted and v.groupdict().get("sep", "") in ("==", "===", "!=", "!=="):
            continue  # a comparison with a variable, not a literal
        value = v.group(group) if quoted else v.group("bare").rstrip(".:,")
        start = v.start(group)
        prose = "is" in (v.groupdict().get("sep") or "")
        after = text[start + len(value):start + len(value) + 1]
        if value_is_secret(value, key, after, quoted, prose):
            yield start, start + len(value), value
            last = start + len(value)


def _url_credentials(text: str) -> Iterator[Span]:
    for m in _URL_CREDENTIALS.finditer(text):
        user, secret = m.group("user"), m.group("secret")
        if not user and secret is None:
            continue
        if secret is None:  # https://TOKEN@host: a token in the user position
            if len(user) >= 16 or high_entropy(user):
                yield m.start("user"), m.end("user"), "SECRET", user
            elif not PLACEHOLDER.fullmatch(user):
                yield m.start("user"), m.end("user"), "USER", user
            continue
        if user and not PLACEHOLDER.fullmatch(user):
            yield m.start("user"), m.end("user"), "USER", user
        if not PLACEHOLDER.fullmatch(secret):
            yield m.start("secret"), m.end("secret"), "SECRET", secret


def _auth_calls(text: str) -> Iterator[Span]:
    for m in _AUTH_CALL.finditer(text):
        secret, user = m.group("secret"), m.group("user")
        if _literal(secret):
            yield m.start("secret"), m.end("secret"), "SECRET", secret
        if user and _literal(user) and "@" not in user:  # an address is found as EMAIL
            yield m.start("user"), m.end("user"), "USER", user


def _pgpass(text: str) -> Iterator[Span]:
    for m in _PGPASS.finditer(text):
        host, db, user = m.group("host"), m.group("db"), m.group("user")
        if not (any(c.isalpha() or c == "*" for c in host) or host.count(".") == 3):
            continue  # 12:30:45:00:00 is a time
        if not all(any(c.isalpha() or c == "*" for c in f) for f in (db, user)):
            continue
        secret = m.group("secret")
        if _literal(secret):
            yield m.start("secret"), m.end("secret"), "SECRET", secret
        if user != "*":
            yield m.start("user"), m.end("user"), "USER", user


def _netrc(text: str) -> Iterator[Span]:
    """The ``login`` and ``password`` of each ``.netrc`` entry (the tokens after ``machine
    h`` or ``default``, over lines and their gutters, up to the next entry)."""
    for m in _NETRC.finditer(text):
        pos, field = m.end(), None
        for _ in range(12):
            t = _NETRC_TOKEN.match(text, pos)
            if t is None:
                break
            pos, token = t.end(), t.group("token")
            if field is None:
                field = _NETRC_FIELDS.get(token)
                if field is None:
                    break  # machine, default, macdef: the entry ended
                continue
            if _literal(token):
                yield t.start("token"), t.end("token"), field, token
            field = None


def _yaml_blocks(text: str) -> Iterator[Span]:
    """The content lines of a block scalar (``key: |``) under a secret-named key; in a
    diff or a listing, the lines that carry the key line's gutter."""
    for m in at_line_starts(_YAML_BLOCK, text, _YAML_GATE.finditer(text)):
        if not key_is_secret(m.group("key")):
            continue
        indent = len(m.group("sp").expandtabs())
        gutter = gutter_at(text, m.start())
        mark = gutter.strip()[:1] if len(gutter) <= m.start("sp") - m.start() else ""
        if mark in ("+", "-"):
            repeated = re.compile(rf"[+ -]{{{len(gutter)}}}")
        else:
            repeated = _LINE_GUTTERS.get("#" if mark.isdigit() else mark)
        pos = m.end()
        while True:
            sep = "\\n" if text.startswith("\\n", pos) else "\n" if text.startswith("\n", pos) else None
            if sep is None:
                break
            start = pos + len(sep)
            nl = text.find("\n", start)
            nl = len(text) if nl < 0 else nl
            esc = text.find("\\n", start, nl)
            end = nl if esc < 0 else esc
            if repeated is not None:
                g = repeated.match(text, start, end)
                if g is None:
                    break  # the diff's or listing's lines ended
                start = g.end()
            line = text[start:end]
            body = line.lstrip(" \t")
            if body and len(line[:len(line) - len(body)].expandtabs()) <= indent:
                break  # back at the key's indentation: the block ended
            value = body.rstrip()
            if value and not PLACEHOLDER.fullmatch(value):
                first = start + len(line) - len(body)
                yield first, first + len(value), "SECRET", value
            pos = end


def _echo_base64(text: str) -> Iterator[tuple[re.Match, str, bool]]:
    """(match, group of the plaintext, whether the command decodes) of ``echo x | base64``."""
    for m in _ECHO_B64.finditer(text):
        plain = next(g for g in ("quoted", "bare", "quoted2", "bare2") if m.group(g) is not None)
        if not _literal(m.group(plain)) or m.group(plain).startswith("-"):
            continue
        flags = m.group("flags") or m.group("flags2") or ""
        yield m, plain, bool(_DECODE_FLAG.search(" " + flags))


def _cookies(text: str, low: str) -> Iterator[Span]:
    for m in _COOKIE_HEADER.finditer(low):
        pos = m.end()
        while True:
            pair = _COOKIE_PAIR.match(text, pos)
            if pair is None:
                break
            name, value = pair.group("name"), pair.group("value")
            if name.lower() not in _COOKIE_ATTRIBUTES and _literal(value):
                yield pair.start("value"), pair.end("value"), "SECRET", value
            if pair.end() == pos:
                break
            pos = pair.end()
