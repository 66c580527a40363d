"""Which names name a secret, and which values under them are secrets rather than code.

``key_is_secret(key)``: ``DB_PASSWORD``, ``apiToken``, ``client_secret``, ``--password``,
``JSESSIONID`` name secrets; ``max_tokens``, ``password_hash``, ``token_count`` do not (a
word of the key says it is a count, a hash, a type ...).

``value_is_secret(value, key, after, quoted, prose)``: a literal, not a variable
(``$DB_PASSWORD``, ``{{ secret }}``, ``%(pw)s``), a path, a documentation placeholder
(``<your-token>``), an already masked value (``****``), a code word (``None``,
``getpass``), a call or attribute (``os.environ[...]``, ``config.api_key``), the key
repeated (``password=password``) or, in prose (``the password is incorrect``), a plain word.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .text import PLACEHOLDER

KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SECRET_WORDS = frozenset({"password", "passwd", "pass", "pwd", "passphrase", "passcode", "secret", "secrets",
                           "token", "apikey", "credential", "credentials", "creds", "signature", "cookie",
                           "webhook", "privatekey", "secretkey", "accesskey", "authtoken", "authkey",
                           "sessionid", "jsessionid", "phpsessid", "sessid", "passwort", "motdepasse"})
_SECRET_SUFFIXES = ("password", "passwd", "secret", "token", "apikey", "secretkey", "accesskey", "sessionid")
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("secret", "key"), ("private", "key"),
                           ("client", "secret"), ("auth", "key"), ("signing", "key"), ("encryption", "key"),
                           ("master", "key"), ("session", "key"), ("account", "key"), ("service", "key"),
                           ("app", "key"), ("shared", "key"), ("license", "key"), ("deploy", "key"),
                           ("x", "key"), ("sas", "key"), ("storage", "key"), ("subscription", "key"),
                           ("mot", "de")})
_NOT_SECRET_WORDS = frozenset({
    "count", "counts", "type", "types", "limit", "limits", "budget", "usage", "len", "length", "size", "max",
    "min", "num", "total", "input", "output", "prompt", "completion", "cache", "cached", "reasoning", "path",
    "paths", "file", "filename", "dir", "name", "names", "field", "fields", "header", "prefix", "suffix",
    "format", "ttl", "expiry", "expires", "expiration", "expire", "expired", "policy", "required",
    "enabled", "disabled", "hint", "label", "placeholder", "strength", "regex", "pattern", "validator",
    "hash", "hashed", "id", "ids", "index", "idx", "position", "kind", "mode", "method", "store", "manager",
    "provider", "class", "error", "errors", "message", "version", "bytes", "bits", "chars", "encoding",
    "algorithm", "alg", "scheme", "source", "var", "env", "variable", "reset", "rotation", "confirm",
    "confirmation", "visible", "show", "hide", "toggle", "input", "form", "schema", "location", "ref",
    "tokens", "tokenizer", "rate", "price", "cost", "estimate", "window", "keys", "keyboard", "keyword",
    "keywords", "monkey", "turkey", "hotkey", "keydown", "keyup", "keypress", "keyof", "primary", "foreign",
    "sort", "partition", "cluster", "dict", "map", "lookup"})
CODE_WORDS = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "str", "string", "bytes", "int", "integer",
    "bool", "boolean", "number", "float", "any", "object", "optional", "required", "secret", "secrets",
    "password", "passwd", "token", "key", "value", "self", "this", "new", "await", "async", "function",
    "lambda", "return", "get", "set", "env", "environ", "os", "getenv", "input", "getpass", "void", "char",
    "const", "let", "var", "def", "type", "dict", "list", "map", "text", "varchar", "empty", "default",
    "secretstr", "optional[str]", "str|none", "yes", "no", "on", "off", "enabled", "disabled", "redacted",
    "hidden", "masked", "omitted", "unset", "changeme_in_production", "string?", "any?", "record", "uuid"})
CODE_RECEIVERS = frozenset({
    "self", "this", "cls", "args", "opts", "options", "config", "cfg", "conf", "settings", "env", "environ",
    "os", "process", "request", "req", "params", "props", "ctx", "context", "kwargs", "data", "form", "body",
    "st", "secrets", "credentials", "creds", "auth", "app", "user", "values", "payload", "response", "res",
    "obj", "item", "record", "row", "result", "session", "state", "store", "model", "cli", "parsed", "ns",
    "window", "document", "localstorage", "import", "module", "exports", "vars", "inputs", "github", "matrix"})


def key_words(name: str) -> list[str]:
    """``DB_PASSWORD`` -> ``["db", "password"]``; ``apiToken`` -> ``["api", "token"]``."""
    return [w.lower() for w in _KEY_WORDS.findall(name.lstrip("-"))]


@lru_cache(maxsize=1 << 14)  # a transcript's records repeat their keys
def key_is_secret(key: str) -> bool:
    """Does this key name a secret (``DB_PASSWORD``, ``apiToken``), not a count of one?"""
    words = key_words(key)
    if not words or any(w in _NOT_SECRET_WORDS for w in words):
        return False
    return names_secret(key)


def names_secret(name: str) -> bool:
    """Does this name contain a secret word (``password``, ``api`` + ``key`` ...)?"""
    words = key_words(name)
    if words == ["pass"] and name.lstrip("-").isupper() and not name.startswith("-"):
        return False  # "--- PASS: TestFoo", a test verdict; DB_PASS, pass= and --pass are keys
    if any(w in _SECRET_WORDS or (len(w) > 6 and w.endswith(_SECRET_SUFFIXES)) for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def value_is_secret(value: str, key: str, after: str, quoted: bool, prose: bool) -> bool:
    """Is ``value`` (under ``key``, followed by ``after``) a literal secret? See the module doc."""
    low = value.lower()
    if not value or PLACEHOLDER.fullmatch(value) or low in CODE_WORDS:
        return False
    if value.startswith(("$", "{{", "%(", "%{", "/", "./", "../", "~/", "...")) or re.fullmatch(r"%\w+%", value):
        return False  # variables, templates, paths
    if value.startswith("<") and value.endswith(">"):
        return False  # a documentation placeholder: <your-token>
    if not quoted and (value[0] in "#&*|>" or re.fullmatch(r"![A-Z]\w*", value)):
        return False  # YAML comments, anchors, aliases, tags, block scalar indicators
    if len(value) >= 3 and (set(value) <= set("*•#.") or set(value.lower()) == {"x"}):
        return False  # already masked
    if not quoted and (after[:1] in ("(", ".", "[", "{") or any(c in value for c in "()[]{}")):
        return False  # code: a call, an attribute or an index
    dotted = value.split(".")
    if len(dotted) > 1 and dotted[0].lower() in CODE_RECEIVERS and all(p.isidentifier() for p in dotted):
        return False  # attribute access: config.api_key, process.env.TOKEN
    if value.isidentifier():
        words = [w for w in _KEY_WORDS.findall(value) if not w.isdigit()]
        if low == key.lower().lstrip("-") or (len(words) > 1 and names_secret(value)):
            return False  # password=password, token = access_token, pw == hashed_password
    if prose and value.isalpha() and (value.islower() or value.istitle()):
        return False  # "the password is incorrect"
    return True
