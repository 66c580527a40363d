"""Where things run: host names, addresses, ports, MAC addresses, cloud accounts and ARNs.

``find(text, low)`` yields ``(class, value)``:

=======  ====================================================================================
class    found by
=======  ====================================================================================
HOST     by shape: fully qualified host names (a known top-level domain, not a file
         extension; well-known public services such as ``github.com`` and the documentation
         domains ``example.com`` / ``.test`` / ``.example`` excepted); the private suffixes
         of home routers, mDNS and company networks (``.internal``, ``.local``, ``.lan``,
         ``.corp``, ``.home``, ``.intranet``, ``.localdomain``, ``.localnet``, ``.consul``,
         ``.home.arpa``, ``.fritz.box``, ``.ts.net`` ...; in capitals too:
         ``DC01.CORP.ACME.LOCAL``, ``Annas-MacBook-Pro.local``); internal names of the
         service-environment-number kind (``payments-prod-03``, ``web-stg2``,
         ``prod-db-02``); EC2-style names ``ip-10-0-3-17``; IPv4 and IPv6 addresses (not
         loopback, nor public resolvers such as ``8.8.8.8``).
         By context, undotted names too: the host of a URL (one with a digit or a dash,
         or any name that is not a generic service's — ``db``, ``redis`` — when the URL
         names a user or a port: ``postgres://app@pgmain:5432``, ``jdbc:``, ``redis://``);
         ``host:port``; ``ssh`` / ``scp`` / ``rsync`` targets ``user@host:``; names the
         session's own commands address (``ping`` / ``telnet`` / ``nc`` / ``dig`` /
         ``nslookup`` / ``traceroute`` / ``mtr`` / ``curl`` / ``wget`` ... targets with a
         digit or a dash); ``Host`` / ``HostName`` lines of an ssh config; the names of an
         ``/etc/hosts`` line; the server of a connection string (``Server=tcp:sql04,1433;``,
         ``Data Source=``, ``Host=...;``); the value of a key that names a host
         (``DB_HOST=``, ``host:``, ``--host``) with a digit or a dash; shell prompts' hosts.
         Line-anchored contexts are read in a file's body as a tool call writes or shows
         it too (``apply_patch`` ``+`` lines, numbered listings: :data:`~.text.GUTTER`)
PORT     the port of a redacted ``host:port`` (and of ``localhost:port``)
MAC      MAC addresses ``aa:bb:cc:dd:ee:ff`` / ``aa-bb-...`` / ``aabb.ccdd.eeff`` (not all-zero
         or broadcast)
ARN      Amazon Resource Names with an account id or a bucket (``arn:aws:iam::123456789012:role/x``)
ACCOUNT  12-digit AWS account ids in ARNs, ECR registry hosts and account contexts
         (``"Account": "..."``, ``AWS_ACCOUNT_ID=``, ``--account-id``, ``account id``);
         Azure subscription ids (``/subscriptions/<uuid>``, ``subscription id``)
=======  ====================================================================================
"""
from __future__ import annotations

import ipaddress
import re
from typing import Iterator

from .secret_names import CODE_RECEIVERS, CODE_WORDS, key_words
from .text import LINE_BODY, at_line_starts, walk_back

# Registrable domains of public services: hosts under them identify no one.
PUBLIC_DOMAINS = frozenset({
    "github.com", "githubusercontent.com", "githubassets.com", "gitlab.com", "bitbucket.org",
    "anthropic.com", "claude.ai", "claude.com", "openai.com", "chatgpt.com", "google.com",
    "googleapis.com", "gstatic.com", "youtube.com", "microsoft.com", "apple.com", "amazon.com",
    "stackoverflow.com", "stackexchange.com", "wikipedia.org", "mozilla.org", "w3.org",
    "python.org", "pypi.org", "pythonhosted.org", "readthedocs.io", "readthedocs.org", "npmjs.com",
    "npmjs.org", "yarnpkg.com", "nodejs.org", "jsdelivr.net", "unpkg.com", "cloudflare.com",
    "docker.com", "docker.io", "huggingface.co", "kaggle.com", "arxiv.org", "doi.org", "orcid.org",
    "golang.org", "go.dev", "rust-lang.org", "crates.io", "rubygems.org", "ubuntu.com",
    "debian.org", "archlinux.org", "kernel.org", "gnu.org", "apache.org", "vercel.com",
    "netlify.com", "heroku.com", "schema.org", "json-schema.org", "shields.io", "mit.edu",
    "opensource.org", "creativecommons.org", "sentry.io", "astral.sh", "anaconda.org",
    "conda.io", "quarto.org", "jupyter.org", "reactjs.org", "react.dev", "vuejs.org",
    "typescriptlang.org", "mdn.io", "slack.com", "discord.com", "x.com", "twitter.com",
    "linkedin.com", "medium.com", "substack.com", "reddit.com", "socket.io",
    # documentation names (RFC 2606 / 6761): they stand for no real host
    "example.com", "example.org", "example.net", "example", "test", "invalid",
    # names every Docker and cloud VM resolves alike
    "docker.internal", "google.internal"})
_PRIVATE_TLDS = (r"local|internal|lan|corp|home|intranet|localdomain|localnet|workgroup|ts\.net|consul|home\.arpa"
                 r"|fritz\.box|priv|private|intra")
_TLDS = ("com|net|org|io|ai|co|dev|edu|gov|mil|int|eu|us|uk|de|fr|nl|be|ch|at|se|dk|fi|es|pt|ie|it|ru|cn|jp|kr"
         "|au|nz|ca|br|mx|ar|za|tech|online|site|xyz|biz|cloud|app|" + _PRIVATE_TLDS)
_URL = re.compile(r"(?<=[a-zA-Z0-9])://(?:(?P<user>[^/\s\"'<>]*)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)"
                  r"(?::(?P<port>\d{1,5}))?")
_FQDN = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"rf"(?:{_TLDS})", re.I)
# (the lookbehinds below follow the first character they guard: a pattern that starts with
# one is tried at every position of a text)
_TLD_AT = re.compile(rf"\.(?<=[A-Za-z0-9]\.)(?:{_TLDS})(?![\w(-]|\.\w)", re.I)  # where a host name ends
_TLD_GATE = re.compile(rf"\.(?:{_TLDS})", re.I)
# .local/.internal/... are private by definition; the other TLDs above need a host-like shape
# in code (``tf.io``, ``self.app`` are attribute access): so those take two labels before a
# common TLD, or a URL / port / ssh context.
_PRIVATE_SUFFIX = re.compile(rf"\.(?:{_PRIVATE_TLDS})$", re.I)
# in capitals, a private suffix is also an enum member (Scope.LOCAL, Mode.INTERNAL): these are not
_UPPER_PRIVATE = frozenset({"lan", "corp", "localdomain", "localnet", "intranet", "arpa", "box"})
# suffixes no attribute is named (self.internal, Scope.home are code; Foo.local, NAS.lan are not)
_NETWORK_SUFFIX = re.compile(r"\.(?:local|lan|localdomain|localnet|home\.arpa|fritz\.box|workgroup)$")
_CODE_TLDS = frozenset({"io", "ai", "co", "dev", "app", "cloud", "home", "it", "at", "be", "int", "us", "ca", "es",
                        "priv", "private", "intra", "local"})
_HOST = re.compile(r"localhost|(?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+|\[[0-9A-Fa-f:.]+\]")
_PORT_AT = re.compile(r"(?<=[A-Za-z0-9\]]):(?P<port>\d{2,5})(?![\d.])")  # where host:port ends
_FILE_EXTS = frozenset(
    "py pyi pyx ipynb js mjs cjs ts tsx jsx mts cts md mdx qmd rst txt json jsonl yaml yml toml ini cfg conf "
    "lock rs go java kt kts c h cc cpp hpp cxx rb php sh bash zsh fish ps1 sql html htm css scss sass less "
    "vue svelte xml csv tsv log swift m mm pl pm ex exs erl hs ml lua r jl dart scala cs fs tex bib proto "
    "gradle tf hcl zig nim lean el clj vim env diff patch png jpg jpeg gif svg pdf zip gz tar whl so dll "
    "dylib exe bin wasm map snap test spec config d mod sum".split())
_IPV4 = re.compile(r"(\d(?<![\w.].)\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3})(?![\w]|\.\d)")
_IPV6_AT = re.compile(r":[0-9A-Fa-f]{0,4}:")  # every IPv6 address holds one; then widened
_IPV6_CHARS = frozenset("0123456789abcdefABCDEF:")
_IPV6_TAIL = frozenset("0123456789abcdefABCDEF:.")
_EC2_NAME = re.compile(r"(?<![\w-])ip-(?:\d{1,3}-){3}\d{1,3}(?![\w-])")
_SSH_TARGET = re.compile(r"\b(?:ssh|scp|sftp|rsync|mosh|ssh-copy-id)\s+(?:-\S+\s+(?:\S+\s+)?)*?"
                         r"(?:(?P<user>[a-z_][a-z0-9_.-]*)@(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)"
                         r"|(?P<bare>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*))(?=[\s:'\"/&]|\\[nrt\"]|$)")
# commands whose argument is a host; flags with a value are skipped (-c 3, -p 22)
# (the command word first, its start checked apart: a pattern that starts with a lookbehind
# is tried at every position of the text)
_HOST_COMMAND = re.compile(r"(?:ping6?|telnet|nc|ncat|netcat|dig|nslookup|traceroute6?"
                           r"|tracepath|mtr|curl|wget|ssh-keyscan|ssh-keygen\s+-R)"
                           r"(?:\s+(?:-\w+|--[\w-]+)(?:[ =](?!-)(?:\d+|\w+(?=\s+-)))?)*\s+"
                           r"(?:[a-z_][\w.-]*@)?(?P<host>[A-Za-z][A-Za-z0-9-]{1,62})(?=[\s:;&|)\"'`/]|\\[nrt\"]|$)", re.M)
_COMMAND_AFTER = frozenset(" \t\r\n\f\v;&|(`$\"'=/")
_SSH_CONFIG = re.compile(LINE_BODY + r"(?P<indent>[ \t]*)(?P<kw>Host|HostName)[ \t]+"
                         r"(?P<hosts>[A-Za-z0-9][\w.-]*(?:[ \t]+[A-Za-z0-9][\w.-]*)*)[ \t]*(?=\r?\n|\\n|$|\\*[\"'])")
# an ssh config's Host block goes on with indented options: then its aliases are hosts, not
# words ("Host key verification failed.")
_SSH_OPTION_NEXT = re.compile(r"[ \t]*(?:\r?\n|\\n)" + LINE_BODY + r"[ \t]+(?i:hostname|user|port|identityfile|proxyjump"
                              r"|proxycommand|forwardagent|identitiesonly|localforward|serveraliveinterval)\b")
_SSH_CONFIG_HIT = re.compile(r"\bHost(?:Name)?[ \t]")
_HOSTS_LINE = re.compile(LINE_BODY + r"[ \t]*(?:\d{1,3}\.){3}\d{1,3}[ \t]+(?P<names>[A-Za-z][\w.-]*(?:[ \t]+[A-Za-z][\w.-]*)*)"
                         r"[ \t]*(?=\r?\n|\\n|$|[ \t]*#|\\*[\"'/])")
_HOSTS_LINE_HIT = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}[ \t]+[A-Za-z]")
_NOT_HOSTS = frozenset({"localhost", "ip6-localhost", "ip6-loopback", "broadcasthost", "host", "hostname", "none",
                        "example", "server", "remote", "target", "the", "and", "to", "on", "in", "my", "your",
                        "this", "that", "http", "https", "get", "post", "put", "delete", "head", "options", "patch",
                        "install", "version", "help", "true", "false", "null"})
# Names every docker-compose file and tutorial gives its services: they locate no one.
_GENERIC_HOSTS = _NOT_HOSTS | frozenset({
    "db", "database", "postgres", "postgresql", "pg", "mysql", "mariadb", "redis", "mongo", "mongodb", "rabbitmq",
    "rabbit", "kafka", "zookeeper", "elasticsearch", "elastic", "opensearch", "minio", "memcached", "web", "app",
    "api", "backend", "frontend", "nginx", "proxy", "cache", "worker", "grafana", "prometheus", "jaeger",
    "keycloak", "vault", "consul", "localstack", "mailhog", "selenium", "chrome", "sqlserver", "mssql", "oracle",
    "clickhouse", "cassandra", "etcd", "nats", "traefik", "caddy", "jenkins", "registry", "ollama", "origin",
    "upstream", "service", "svc", "gateway", "router", "storage", "queue", "broker", "smtp", "mail", "ftp", "ldap",
    "dns", "ntp", "user", "username", "password", "pass", "local", "internal", "myhost", "yourhost", "your-host",
    "my-host", "hostname", "servername", "your-server", "my-server", "dbhost", "db-host", "remotehost", "machine",
    "foo", "bar", "baz", "qux", "github", "gitlab", "bitbucket", "instance", "node", "box", "vm", "container"})
# Deployment environments, as internal host names spell them: payments-prod-03, web-stg2, prod-db-02
_ENVS = r"prod|production|prd|preprod|staging|stage|stg|uat|qa|dev|ci|int|sandbox|sbx|canary|perf|nonprod"
_ENV_WORDS = frozenset(_ENVS.split("|"))
_ENV_FIRST = frozenset({"prod", "production", "prd", "preprod", "staging", "stg", "uat"})  # env-service-number
_ENV_NUMBER = re.compile(rf"(?:{_ENVS})?\d{{1,4}}[a-z]?")
# a dashed name ending in digits, not part of a dotted name, a path's word or a flag (lowered)
_DASHED_NUMBERED = re.compile(r"(?<![\w.\\:-])[a-z][a-z0-9]*+(?:-[a-z0-9]+)*-[a-z]*\d{1,4}[a-z]?(?![\w-]|\.\w)")
_LETTERS = re.compile(r"[a-z]*")
# the server of a connection string (ADO.NET, Npgsql, ODBC): Server=tcp:sql04,1433; Host=pg1;Port=...
_CONNECTION_SERVER = re.compile(r"(?:server|data source|host|address|addr|hostname)=(?:tcp:)?"  # lowered
                                r"(?P<host>[a-z][\w.-]*)(?=[ \t]*[,;])")
_CONNECTION_AFTER = frozenset(";\"'{=&?/+\u2192 \t\r\n")
# the value of a key that names a host: DB_HOST=x, "host": "x", host: x, --host x (the key's
# end found first, lowered), -h x (psql, mysql ...)
_HOST_KEY_END = re.compile(r"host(?:name)?|server(?:_?name)?")
_HOST_KEY_VALUE = re.compile(r"(?:\\*[\"'])?[ \t]*(?:=|:|[ \t])[ \t]*(?:\\*[\"'])?(?P<host>[a-z][\w.-]*)(?![\w.(\[-])")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_HOST_FLAG = re.compile(r"(?:psql|pg_dump|pg_restore|pg_isready|mysql|mysqldump|mariadb|redis-cli|mongo(?:sh|dump)?"
                        r"|clickhouse-client)\b[^\n]*?\s-h[ \t]*(?P<host>[A-Za-z][\w.-]*)")  # (its start: see _COMMAND_AFTER)
_MAC = re.compile(r"[0-9A-Fa-f](?<![0-9A-Fa-f:.-].)(?:[0-9A-Fa-f]([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}"
                  r"|[0-9A-Fa-f]{3}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})(?![0-9A-Fa-f:.-]|\.\w)")
_ARN = re.compile(r"\barn:aws[\w-]*:[\w-]+:[\w-]*:(?P<account>\d{12})?:[^\s\"'`,;)}\]\\<>]+")
_ACCOUNT_CONTEXT = re.compile(r"(?:account[\s_-]?(?:id|number|no)?|aws_account_id|owner[\s_-]?id|account_id)"  # lowered
                              r"(?:\\*[\"'])?\s*[:=]?\s*(?:\\*[\"'])?(?P<id>\d{12})(?!\d)"
                              r"|(?<![\w])(?P<ecr>\d{12})\.dkr\.ecr\.")
_AZURE_SUBSCRIPTION = re.compile(r"(?:/subscriptions/|subscription[\s_-]?id[\"']?\s*[:=]?\s*[\"']?)"  # lowered
                                 r"(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
_MAX_HOST = 253  # characters of a host name at most (RFC 1035)
_HOST_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")
_COMMAND_WORDS = ("ssh", "scp", "sftp", "rsync", "mosh", "ping", "telnet", "nc ", "ncat", "netcat", "dig ",
                  "nslookup", "traceroute", "tracepath", "mtr ", "curl", "wget", "keyscan", "keygen")


def find(text: str, low: str) -> Iterator[tuple[str, str]]:
    """(class, value) of hosts, ports, MACs, ARNs and accounts of ``text``; see the module doc."""
    yield from _urls(text)
    yield from _host_ports(text)
    if _TLD_GATE.search(low):
        yield from _dotted_names(text)
    if "-" in low:
        for m in _DASHED_NUMBERED.finditer(low):
            if _service_env(m.group(0)):
                yield "HOST", text[m.start():m.end()]
    if "host" in low or "server" in low or "data source" in low or "addr" in low or "-h" in low:
        yield from _host_keys(text, low)
    for m in _IPV4.finditer(text):
        if _ipv4(m.group(1)) and not loopback(m.group(1)):
            yield "HOST", m.group(1)
    yield from _ipv6s(text)
    if "ip-" in text:
        for m in _EC2_NAME.finditer(text):
            yield "HOST", m.group(0)
    if any(w in low for w in _COMMAND_WORDS):
        yield from _command_targets(text)
    if "host" in low:
        for m in at_line_starts(_SSH_CONFIG, text, _SSH_CONFIG_HIT.finditer(text)):
            names = m.group("hosts").split()
            config = (m.group("indent") if m.group("kw") == "HostName" else _SSH_OPTION_NEXT.match(text, m.end()))
            for name in names:
                if _named_host(name) or (config and _plain_host(name)):
                    yield "HOST", name
    if "." in text:
        for m in at_line_starts(_HOSTS_LINE, text, _HOSTS_LINE_HIT.finditer(text)):
            for name in m.group("names").split():
                if _named_host(name):
                    yield "HOST", name
    if ":" in text or "-" in text or "." in text:
        for m in _MAC.finditer(text):
            digits = re.sub(r"[:.-]", "", m.group(0)).lower()
            if digits not in ("000000000000", "ffffffffffff") and not (m.group(1) != ":" and digits.isdigit()):
                yield "MAC", m.group(0)
    yield from _accounts(text, low)


# Public resolvers everyone types (ping 8.8.8.8): they locate no one.
_PUBLIC_RESOLVERS = frozenset({"8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9", "149.112.112.112",
                               "208.67.222.222", "208.67.220.220", "2001:4860:4860::8888", "2001:4860:4860::8844",
                               "2606:4700:4700::1111", "2606:4700:4700::1001"})


def loopback(host: str) -> bool:
    """``localhost``, ``127.x``, ``::1``, ``0.0.0.0``, a public resolver: no one's address."""
    h = host.strip("[]").lower()
    if h in ("localhost", "0.0.0.0", "255.255.255.255", "::", "::1") or h in _PUBLIC_RESOLVERS:
        return True
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


def public_host(host: str) -> bool:
    h = host.lower().rstrip(".")
    return any(h == d or h.endswith("." + d) for d in PUBLIC_DOMAINS)


def _urls(text: str) -> Iterator[tuple[str, str]]:
    if "://" not in text:
        return
    for m in _URL.finditer(text):
        host = m.group("host").rstrip(".")
        if host == "localhost" and m.group("port"):
            yield "PORT", f"localhost:{m.group('port')}"  # as a bare localhost:5173
        if loopback(host) or public_host(host):
            continue
        bare = host.strip("[]")
        if "." in host or ":" in bare or _named_host(host) \
                or ((m.group("port") or m.group("user")) and _plain_host(host)):
            yield "HOST", bare
            if m.group("port"):
                yield "PORT", f"{host}:{m.group('port')}"


def _host_ports(text: str) -> Iterator[tuple[str, str]]:
    for m in _PORT_AT.finditer(text):
        if text[m.start() - 1] == "]":
            start = text.rfind("[", max(0, m.start() - 48), m.start())
        else:
            start = walk_back(text, m.start(), _HOST_CHARS, _MAX_HOST)
        host = text[start:m.start()] if start >= 0 else ""
        if not _HOST.fullmatch(host) or (start > 0 and text[start - 1] in "_@/"):
            continue
        if loopback(host) and host != "localhost":
            continue
        if host == "localhost" or _ipv4(host) or host.startswith("[") or _host_like(host):
            if not public_host(host):
                if host != "localhost":
                    yield "HOST", host.strip("[]")
                yield "PORT", f"{host}:{m.group('port')}"


def _dotted_names(text: str) -> Iterator[tuple[str, str]]:
    for m in _TLD_AT.finditer(text):
        start = walk_back(text, m.start(), _HOST_CHARS, _MAX_HOST)
        if start < 0:
            continue
        host = text[start:m.end()].lstrip(".-")
        if not _FQDN.fullmatch(host) or (start > 0 and text[start - 1] in "_@/\\"):
            continue
        labels = host.split(".")
        if public_host(host):
            continue
        first, tld = labels[0], labels[-1]
        if text[start] == "." or "example" in (first.lower(), labels[-2].lower()):
            continue  # a file's name (.env.local), documentation (example.local, x.example.internal)
        glued = any(c.isdigit() or c == "-" for c in first)  # no identifier: Office-PC.home
        if not tld.islower():  # DC01.CORP.ACME.LOCAL, NAS.LAN; not Scope.LOCAL, Mode.INTERNAL, X.COM
            if tld.isupper() and host.isupper() and _PRIVATE_SUFFIX.search(host) \
                    and (len(labels) >= 3 or glued or tld.lower() in _UPPER_PRIVATE):
                yield "HOST", host
        elif _PRIVATE_SUFFIX.search(host):
            if len(labels) >= 3 or glued or (host.islower() and first not in CODE_RECEIVERS) \
                    or (_NETWORK_SUFFIX.search(host.lower()) and first.lower() not in CODE_RECEIVERS):
                yield "HOST", host  # DiskStation.local: only mDNS and home routers name so
        elif len(labels) >= 3 or tld not in _CODE_TLDS:
            yield "HOST", host


def _ipv6s(text: str) -> Iterator[tuple[str, str]]:
    last = -1
    for m in _IPV6_AT.finditer(text):
        if m.start() < last:
            continue
        start = walk_back(text, m.start(), _IPV6_CHARS, 48)
        end = m.end()
        while end < len(text) and end - m.end() < 48 and text[end] in _IPV6_TAIL:
            end += 1
        last = end
        if start < 0:
            continue
        candidate = text[start:end].rstrip(".:")
        if (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_.")) and _ipv6(candidate) \
                and not _MAC.fullmatch(candidate):
            yield "HOST", candidate


def _command_targets(text: str) -> Iterator[tuple[str, str]]:
    for m in _SSH_TARGET.finditer(text):
        user, host = m.group("user"), m.group("host") or m.group("bare")
        if user:
            yield "USER", user
        if "." in host and not public_host(host) and (m.group("user") or _host_like(host)):
            yield "HOST", host
        elif "." not in host and (_named_host(host) or (user and _plain_host(host))):
            yield "HOST", host
    for m in _HOST_COMMAND.finditer(text):
        i = m.start()
        if (i == 0 or text[i - 1] in _COMMAND_AFTER or text[i - 2:i] == "\\n") and _named_host(m.group("host")):
            yield "HOST", m.group("host")


def _service_env(name: str) -> bool:
    """``payments-prod-03``, ``api-prod-eu-1``, ``web-stg2``, ``prod-db-02``: a service, an
    environment and a number (a lowered dashed name)."""
    labels = name.split("-")
    if len(labels) < 2 or not _ENV_NUMBER.fullmatch(labels[-1]):
        return False
    glued = _LETTERS.match(labels[-1]).group(0)
    if glued:  # web-stg2: the environment glued to its number, after a service
        return glued in _ENV_WORDS and labels[-2][0].isalpha() and labels[-2] not in _ENV_WORDS
    return len(labels) >= 3 and (labels[0] not in _ENV_WORDS and any(w in _ENV_WORDS for w in labels[1:-1])
                                 or labels[0] in _ENV_FIRST and labels[1][0].isalpha() and labels[1] not in _ENV_WORDS)


def _host_keys(text: str, low: str) -> Iterator[tuple[str, str]]:
    """Hosts by the key or the flag that names them; see the module doc."""
    if "=" in text:
        for m in _CONNECTION_SERVER.finditer(low):
            host = text[m.start("host"):m.end("host")]
            if (m.start() == 0 or low[m.start() - 1] in _CONNECTION_AFTER) \
                    and (_key_host(host) or ("." not in host and _plain_host(host))):
                yield "HOST", host
    for m in _HOST_KEY_END.finditer(low):
        if m.end() < len(low) and low[m.end()] in _KEY_CHARS and low[m.end()] not in ".-":
            continue  # inside a longer word: hostile, servers
        v = _HOST_KEY_VALUE.match(low, m.end())
        start = walk_back(low, m.start(), _KEY_CHARS, 64)
        if v is None or start < 0:
            continue
        host = text[v.start("host"):v.end("host")]
        words = key_words(text[start:m.end()])
        if words and words[-1] in ("host", "hostname", "server", "name") and _key_host(host):
            yield "HOST", host
    if "-h" in text:
        for m in _HOST_FLAG.finditer(text):
            i = m.start()
            if (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) and _key_host(m.group("host")):
                yield "HOST", m.group("host")


def _key_host(host: str) -> bool:
    """A host named by a key: a name with a digit or a dash, or a dotted host name; not
    code (``args.host``, ``self.db.host``)."""
    labels = host.lower().split(".")
    if labels[0] in CODE_RECEIVERS or labels[0] in CODE_WORDS or loopback(host):
        return False
    if len(labels) > 1:
        return _host_like(host) and not public_host(host)
    return _named_host(host)


def _plain_host(name: str) -> bool:
    """An undotted word that, where the context says a host stands, names one: not a
    generic service (``db``, ``redis``), a placeholder or a keyword."""
    low = name.lower()
    return len(name) >= 3 and name[0].isalpha() and low not in _GENERIC_HOSTS and low not in CODE_WORDS \
        and not low.startswith(("my", "your")) and all(c.isalnum() or c in "-_" for c in name)


def _named_host(name: str) -> bool:
    """An undotted name that is a machine's (``jenkins-prod-02``, ``devbox7``), not a word."""
    low = name.lower()
    if low in _NOT_HOSTS or len(name) < 3 or name.startswith("-") or not name[0].isalpha():
        return False
    return ("." in name and _host_like(name) and not public_host(name)) or any(c.isdigit() for c in name) \
        or ("-" in name and not name.endswith("-"))


def _accounts(text: str, low: str) -> Iterator[tuple[str, str]]:
    if "arn:" in text:
        for m in _ARN.finditer(text):
            arn = m.group(0).rstrip(".:")
            if m.group("account"):
                yield "ACCOUNT", m.group("account")
                yield "ARN", arn
            elif arn.startswith("arn:aws:s3:::") and len(arn) > len("arn:aws:s3:::"):
                yield "ARN", arn
    if "account" in low or ".dkr.ecr." in low or "owner" in low:
        for m in _ACCOUNT_CONTEXT.finditer(low):
            group = "id" if m.group("id") else "ecr"
            yield "ACCOUNT", text[m.start(group):m.end(group)]
    if "subscription" in low:
        for m in _AZURE_SUBSCRIPTION.finditer(low):
            yield "ACCOUNT", text[m.start("id"):m.end("id")]


def _ipv4(candidate: str) -> bool:
    parts = candidate.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) <= 255 and (p == "0" or not p.startswith("0")) for p in parts)


def _ipv6(candidate: str) -> bool:
    if sum(1 for g in candidate.split("%")[0].split(":") if g) < 3 and "." not in candidate:
        return False
    try:
        ip = ipaddress.IPv6Address(candidate.split("%")[0])
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified)


def _host_like(host: str) -> bool:
    """A dotted name that is a host, not a file (``setup.py``) or a version (``1.2``)."""
    labels = host.lower().split(".")
    return len(labels) >= 2 and labels[-1].isalpha() and labels[-1] not in _FILE_EXTS
