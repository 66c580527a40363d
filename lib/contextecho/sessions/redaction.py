"""Redaction before anything leaves the machine, with a verification pass.

``redact(text) -> (text, report)``. A :class:`Redactor` first *discovers* sensitive
strings, then replaces them by enumerated placeholders that stay the same within one
redactor (use one per session): ``<USER_1>``, ``<EMAIL_1>``, ``<HOST_1>:<PORT_1>``,
``<SECRET_1>`` ..., plus any extra classes given (e.g. ``{"PROJECT": ["codename"]}``).
Then it *verifies*: the output is searched for every original string and
:class:`RedactionLeak` is raised if one survives.

The secret detector is ``detect-secrets`` (Yelp): its regex plugins (AWS, Azure,
Artifactory, basic-auth URLs, Cloudant, Discord, GitHub, GitLab, IBM, JWT, Mailchimp,
npm, OpenAI, PyPI, SendGrid, Slack tokens and webhooks, SoftLayer, Square, Stripe,
Telegram, Twilio), its keyword detector and its base64 high-entropy detector run
in-process on the text (``analyze_string``: no verification requests, no files, no git).
Our own rules cover what it does not:

=========  ===================================================================
class      found by
=========  ===================================================================
SSH_KEY    PEM / OpenSSH / PGP / PuTTY private-key blocks (also cut off before
           their END line); ``ssh-rsa`` / ``ssh-ed25519`` / ``ecdsa-*`` public keys
SECRET     detect-secrets; API-key shapes it lacks (``sk-``, ``sk-ant-``,
           ``github_pat_``, ``AIza``, ``ya29.``, ``hf_``, ``xox?-``, Stripe
           ``sk_/rk_/pk_/whsec_``, full JWTs ...); Slack / Discord / Teams webhook
           URLs; values of ``.env``-style assignments of any length whose key names a
           secret (``DB_PASSWORD=x``, ``aws_secret_access_key = ...``, ``password:
           hunter2``, ``"apiToken": "..."``, ``--password x``, JSON-escaped forms);
           ``Authorization: Basic/Bearer/token`` values, ``curl -u user:pass``,
           ``mysql -pPASS``; passwords of URLs (``https://user:pass@host``);
           unquoted high-entropy tokens (>= 20 characters mixing digits, upper and
           lower case)
USER       user segment of home paths in every form (``/Users/x``, ``/home/x``,
           ``C:\\Users\\x``, dashed ``-Users-x-proj`` / ``-home-x-proj``, with ``.``/``_``
           variants), ``ssh user@host``, shell prompts and SSH key comments
           ``user@host``, URL user names, ``USER=x``-style variables
PERSON     names beside an address (``Jane Doe <jane@x.org>``, git ``Author:`` /
           ``Co-authored-by:`` lines, ``user.name``, ``GIT_AUTHOR_NAME=``)
EMAIL      addresses, except role addresses of public services (``noreply@anthropic.com``)
PHONE      ``+CC ...`` international numbers, ``(415) 555-0132``, ``415-555-0132``,
           numbers after ``phone:`` / ``tel:`` / ``mobile:``
HOST/PORT  hosts of URLs, ``host.domain:5432``, fully qualified host names (a known
           top-level domain, not a file extension; well-known public services
           excepted), private suffixes (``.internal``, ``.local``, ``.lan`` ...),
           ``ssh`` targets, IPv4 (not loopback) and IPv6 addresses
CARD       13-19 digit card numbers of a known issuer range passing the Luhn check
IBAN       bank account numbers passing the ISO 13616 mod-97 check
CRYPTO     Bitcoin (base58check-valid, bech32) and Ethereum addresses
=========  ===================================================================

Replacement. A discovered string is replaced wherever it occurs; user, person, host and
project names case-insensitively and as whole tokens (``tom`` does not touch ``tomato``),
short secrets (under 12 characters) as tokens, longer ones as substrings. Values too
short to be searched for on their own (a 1-5 character password, a 1-2 letter user name)
are replaced in their context only (``DB_PASSWORD=<SECRET_1>``, ``/home/<USER_1>``).

Verification: every discovered original (as above), and every context rule run again
on the output, must find nothing. The report holds counts and placeholders only,
never the originals.
"""
from __future__ import annotations

import hashlib
import ipaddress
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, DENYLIST
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from .errors import RedactionLeak

GENERIC_USERS = frozenset({
    "root", "ubuntu", "user", "users", "runner", "admin", "administrator", "ec2-user", "vscode",
    "codespace", "codespaces", "node", "shared", "public", "guest", "default", "debian", "centos",
    "fedora", "pi", "app", "www-data", "git", "postgres", "mysql", "redis", "nobody", "daemon",
    "jenkins", "docker", "dev", "developer", "test", "tmp", "temp", "home", "me", "you", "username",
    "yourname", "your-name", "your_username", "name", "workspace", "project", "projects", "oauth2",
    "x-access-token", "x-token-auth", "token", "anonymous", "localuser", "vagrant", "coder"})
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
    "linkedin.com", "medium.com", "substack.com", "reddit.com", "socket.io"})
ROLE_EMAILS = frozenset({"noreply@anthropic.com", "git@github.com", "git@gitlab.com",
                         "git@bitbucket.org", "noreply@github.com", "noreply@openai.com"})
CASELESS = frozenset({"USER", "PERSON", "HOST", "PROJECT", "EMAIL", "PORT"})
TOKEN_CLASSES = frozenset({"USER", "PERSON", "HOST", "PROJECT"})  # replaced as whole tokens
SHORT_SECRET = 12  # secrets shorter than this are replaced as whole tokens
MIN_GLOBAL = {"SECRET": 6, "USER": 3}  # shorter values: replaced in their context only

_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*_\d+>")
_PREFIX = 10  # characters of each original in the search index
_TOKEN = re.compile(r"[A-Za-z0-9_]")

# ----------------------------------------------------------------- detect-secrets
# Regex plugins, run with analyze_string (pure regex; analyze_line could verify online).
_DS_PLUGINS = (ArtifactoryDetector(), AWSKeyDetector(), AzureStorageKeyDetector(), BasicAuthDetector(),
               CloudantDetector(), DiscordBotTokenDetector(), GitHubTokenDetector(), GitLabTokenDetector(),
               IbmCloudIamDetector(), IbmCosHmacDetector(), JwtTokenDetector(), MailchimpDetector(),
               NpmDetector(), OpenAIDetector(), PypiTokenDetector(), SendGridDetector(), SlackDetector(),
               SoftlayerDetector(), SquareOAuthDetector(), StripeDetector(), TelegramBotTokenDetector(),
               TwilioKeyDetector())
# Plugins whose every pattern needs a long token or a keyword: skipped on texts without one.
_DS_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=]{20,}")
_DS_KEYWORD_LINE = re.compile("|".join(DENYLIST))  # lower case: run on the lowered text
# Cheap necessary conditions (on the lowered text) of the plugins that are slow to run
# on every text: their patterns need these words, or a line holding one of them.
_DS_GATES = {CloudantDetector: re.compile(r"cl(?:oudant|ou)?[-_]?(?:api)?(?:key|pwd|pw|pass|token)|cloudant\.com"),
             IbmCloudIamDetector: re.compile(r"(?:key|pwd|pass|token)[\"'\]]? *(?:=|:|:=|=>| +|::) *[\"']?[a-z0-9_-]{44}"),
             IbmCosHmacDetector: re.compile(r"secret[-_]?(?:access)?[-_]?key"),
             SoftlayerDetector: re.compile(r"(?:softlayer|sl)[-_]?(?:api)?(?:key|pwd|pass|token)|api\.softlayer\.com"),
             ArtifactoryDetector: re.compile(r"akc[a-z0-9]{10}|ap[0-9a-f][a-z0-9]{8}"),
             MailchimpDetector: re.compile(r"-us\d"),
             TelegramBotTokenDetector: re.compile(r"\d{8}:[0-9a-z_-]{35}"),
             SlackDetector: re.compile(r"xox|hooks\.slack\.com")}
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lower(text: str) -> str:
    """``text`` in lower case, same length (so match positions carry over)."""
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)
_DS_ENTROPY = Base64HighEntropyString()
_DS_PRIVATE_KEY = PrivateKeyDetector()

# ----------------------------------------------------------------- own patterns
_PRIVATE_KEY = re.compile(
    r"-{4,5} ?BEGIN [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    r"(?:(?:(?!-{4,5} ?BEGIN ).){0,16384}?-{4,5} ?END [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    # cut off before its END line (head -5 id_rsa): the base64 lines that follow
    r"|(?:(?:\r?\n|\\r?\\n)[ \t]*(?:[A-Za-z0-9+/=]{16,}(?=[\r\n\\\"']|$)|(?:Proc-Type|DEK-Info): ?[^\n\\]*)?)*)",
    re.S)
_PUTTY_KEY = re.compile(r"PuTTY-User-Key-File-\d+:.{0,16384}?Private-MAC: ?[0-9a-fA-F]+", re.S)
_PUBLIC_KEY = re.compile(r"(?P<key>\b(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com"
                         r"|sk-ecdsa-sha2-nistp256@openssh\.com) AAAA[0-9A-Za-z+/]+={0,3})"
                         r"(?:[ \t]+(?P<comment>[^\s\"'\\<>]+))?")
_API_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-ant-[A-Za-z0-9_-]{20,}"
    r"|sk-(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_-]{0,200}[0-9A-Z])[A-Za-z0-9_-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[a-z]-[A-Za-z0-9-]{10,}"
    r"|xapp-\d-[A-Za-z0-9-]{10,}|(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,}|hf_[A-Za-z0-9]{30,}|gl[a-z]{2,6}-[A-Za-z0-9_-]{20,}"
    r"|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,}|(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"
    r"|whsec_[A-Za-z0-9]{20,}|SG\.[\w-]{16,}\.[\w-]{16,}|dop_v1_[a-f0-9]{64}|dapi[a-f0-9]{32}|shp(?:at|ss|ca)_[a-fA-F0-9]{32}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)")
_WEBHOOK = re.compile(r"https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]+"
                      r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"
                      r"|[\w.-]+\.webhook\.office\.com/[^\s\"'<>\\]+|outlook\.office\.com/webhook/[^\s\"'<>\\]+)")
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9_+=/-])[A-Za-z0-9_+/-]{20,}={0,3}(?![A-Za-z0-9_+=/-])")
# Identifiers of harness records (tool calls, messages, requests), not credentials.
_RECORD_ID = re.compile(r"(?:toolu|srvtoolu|msg|req|call|fc|resp|rs|chatcmpl|file|run|thread|asst|ws)[_-]")
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_IN_URL_AUTHORITY = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s\"'<>]*$")  # user:pass@host is no address
_ANGLE_EMAIL = re.compile(r"<(?P<email>[^<>\s@]+@[^<>\s]+)>")
_NAME_BEFORE = re.compile(
    r"(?P<header>(?i:author|committer|co-authored-by|signed-off-by|reviewed-by|acked-by|tested-by"
    r"|reported-by|suggested-by|helped-by|from|to|cc|reply-to)\s*:\s*)?"
    r"(?P<q>\\?\")?(?P<name>[^\W\d_][\w'.-]*(?:[ \t]+[^\W\d_][\w'.-]*){0,3})(?P=q)?[ \t]*$")
_PERSON_CONFIG = re.compile(r"(?:user\.name|git_(?:author|committer)_name|author_name|committer_name)"  # lowered
                            r"[\"']?[ \t]*[=:]?[ \t]*(?P<q>\\?[\"'])?(?P<name>[^\W\d_][\w'.-]*(?:[ \t]+[^\W\d_][\w'.-]*){0,3})"
                            r"(?(q)(?P=q)|(?=[ \t]*(?:$|\\n|[,;)}])))", re.M)
_NON_PERSONS = frozenset({"claude", "codex", "github", "gitlab", "dependabot", "copilot", "openai",
                          "anthropic", "noreply", "bot", "github actions", "github-actions", "author",
                          "committer", "from", "to", "cc", "name", "your name", "user", "mailto"})
_PHONE = re.compile(
    r"(?<![\w+/.=-])(?:\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}"
    r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}"
    r"|\d{3}[.-]\d{3}[.-]\d{4})(?![\w.-]?\d)")
_PHONE_CONTEXT = re.compile(r"(?:phone|tel|mobile|cell|fax|whatsapp|sms)[\w.-]*[\"']?\s*[:=]?\s*[\"']?"
                            r"(?P<number>\+?\d[\d ().-]{5,18}\d)")
_CARD_HINT = re.compile(r"\d{4}[ -]?\d{4}")
_CARD_CHARS = frozenset("0123456789 -")
_CARD = re.compile(r"(?<![\d.-])\d[\d -]{11,22}\d(?![\d-]|\.\d)")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])")
_BTC = re.compile(r"(?<![A-Za-z0-9])(?:[13][1-9A-HJ-NP-Za-km-z]{25,34}|bc1[ac-hj-np-z02-9]{11,71})(?![A-Za-z0-9])")
_ETH = re.compile(r"(?<![A-Za-z0-9])0x[a-fA-F0-9]{40}(?![A-Za-z0-9])")
_URL = re.compile(r"(?<=[a-zA-Z0-9])://(?:[^/\s\"'<>]*@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)"
                  r"(?::(?P<port>\d{1,5}))?")
_TLDS = ("com|net|org|io|ai|co|dev|edu|gov|mil|int|eu|us|uk|de|fr|nl|be|ch|at|se|dk|fi|es|pt|ie|it|ru|cn|jp|kr"
         "|au|nz|ca|br|mx|ar|za|tech|online|site|xyz|biz|cloud|app|local|internal|lan|corp|home|intranet"
         "|localdomain|ts\\.net")
_FQDN = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"rf"(?:{_TLDS})")
_TLD_AT = re.compile(rf"(?<=[A-Za-z0-9])\.(?:{_TLDS})(?![\w(-]|\.\w)")  # where a host name ends
# .local/.internal/... are private by definition; the other TLDs above need a host-like shape
# in code (``tf.io``, ``self.app`` are attribute access): so those take two labels before a
# common TLD, or a URL / port / ssh context.
_PRIVATE_SUFFIX = re.compile(r"\.(?:local|internal|lan|corp|home|intranet|localdomain|ts\.net)$")
_CODE_TLDS = frozenset({"io", "ai", "co", "dev", "app", "cloud", "home", "it", "at", "be", "int", "us", "ca", "es"})
_HOST = re.compile(r"localhost|(?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+|\[[0-9A-Fa-f:.]+\]")
_PORT_AT = re.compile(r"(?<=[A-Za-z0-9\]]):(?P<port>\d{2,5})(?![\d.])")  # where host:port ends
_FILE_EXTS = frozenset(
    "py pyi pyx ipynb js mjs cjs ts tsx jsx mts cts md mdx qmd rst txt json jsonl yaml yml toml ini cfg conf "
    "lock rs go java kt kts c h cc cpp hpp cxx rb php sh bash zsh fish ps1 sql html htm css scss sass less "
    "vue svelte xml csv tsv log swift m mm pl pm ex exs erl hs ml lua r jl dart scala cs fs tex bib proto "
    "gradle tf hcl zig nim lean el clj vim env diff patch png jpg jpeg gif svg pdf zip gz tar whl so dll "
    "dylib exe bin wasm map snap test spec config d mod sum".split())
_IPV4 = re.compile(r"(?<![0-9.vV])(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})(?![0-9]|\.\d)")
_IPV6_AT = re.compile(r":[0-9A-Fa-f]{0,4}:")  # every IPv6 address holds one; then widened
_IPV6_CHARS = frozenset("0123456789abcdefABCDEF:")
_IPV6_TAIL = frozenset("0123456789abcdefABCDEF:.")
_SSH_TARGET = re.compile(r"\b(?:ssh|scp|sftp|rsync|mosh|ssh-copy-id)\s+(?:-\S+\s+(?:\S+\s+)?)*?"
                         r"(?:(?P<user>[a-z_][a-z0-9_.-]*)@(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)"
                         r"|(?P<bare>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+))(?=[\s:'\"]|$)")
# user@host of shell prompts ("alice@laptop:~/src$") and key comments; host has no dot.
_PROMPT = re.compile(r"@(?P<host>[A-Za-z][A-Za-z0-9-]{1,62})(?=:[~/]|\s*[$#%>]\s)")
_PROMPT_USER = re.compile(r"[a-z_][a-z0-9_.-]{1,31}")
_HOST_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")
_USER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")

# ----------------------------------------------------------------- context rules
_HOME = re.compile(r"/(?:Users|home)/(?P<user>[A-Za-z0-9._-]+)"
                   r"|\\+Users\\+(?P<winuser>[^\\/\n\r\t\"'<>:|*?]+)"
                   r"|-(?:Users|home)-(?P<dashed>[A-Za-z0-9._]+)")
_DASHED_BEFORE = re.compile(r"(?:^|[/\\\s\"'=:(\[]|\\[nrt])(?:[A-Za-z]-)?$")  # -home-x-proj starts a path segment
_URL_CREDENTIALS = re.compile(r"(?<=[a-zA-Z0-9])://(?P<user><[A-Z_]+_\d+>|[^:@/\s\"'<>\\]*)(?::(?P<secret>[^/\s\"'<>\\]+))?@"
                              r"(?=[\w\[<])")
_AUTH_HEADER = re.compile(r"(?:authorization\"?\s*[:=]\s*\"?(?:basic|bearer|token|digest|bot|apikey)"  # lowered
                          r"|bearer|x-api-key\s*:)\s+(?P<secret>[a-z0-9._~+/=:-]{4,})")
_CURL_USER = re.compile(r"(?:\s-u\s*|--user[\s=]+)[\"']?(?P<user>[^:\s\"']+):(?P<secret>[^\s\"']+)")
# passwords on command lines: mysql -pPASS, sshpass -p PASS, docker login -p PASS, .netrc
_CLI_PASSWORD = re.compile(r"(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?P<secret>[^\s\"'\\]+)"
                           r"|(?:sshpass|(?:docker|podman|helm|oras) login)\b[^\n]*?\s-p\s+[\"']?(?P<secret2>[^\s\"'\\]+)"
                           r"|machine\s+\S+\s+login\s+(?P<user>\S+)\s+password\s+(?P<secret3>[^\s\"'\\]+)")
_USER_VARIABLE = re.compile(r"(?:USER|USERNAME|LOGNAME|LOGIN|(?<=[?&;])(?:user|username|login))"
                            r"=[\"']?(?P<user>[A-Za-z][\w.-]{0,31})")  # USER=, DB_USER=, ?user= in URLs

# .env-style assignments: a key naming a secret, a separator, a value.
# Some context rule needs one of these (lowered text); most short strings hold none.
_CONTEXT_TRIGGER = re.compile(r"pass|pwd|secret|token|key|credential|cookie|signature|webhook|://|bearer"
                              r"|authorization|x-api-key|mysql|mariadb|-u|--user|users|home|user=|name=|login=")
_SECRET_WORD = re.compile(r"pass|pwd|secret|token|key|credential|cookie|signature|webhook")  # on lowered text
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SECRET_WORDS = frozenset({"password", "passwd", "pass", "pwd", "passphrase", "passcode", "secret", "secrets",
                           "token", "apikey", "credential", "credentials", "creds", "signature", "cookie",
                           "webhook", "privatekey", "secretkey", "accesskey", "authtoken", "authkey"})
_SECRET_SUFFIXES = ("password", "passwd", "secret", "token", "apikey", "secretkey", "accesskey")
_SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("secret", "key"), ("private", "key"),
                           ("client", "secret"), ("auth", "key"), ("signing", "key"), ("encryption", "key"),
                           ("master", "key"), ("session", "key"), ("account", "key"), ("service", "key"),
                           ("app", "key"), ("shared", "key"), ("license", "key"), ("deploy", "key"),
                           ("x", "key"), ("sas", "key"), ("storage", "key"), ("subscription", "key")})
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
_VALUE = re.compile(r"(?:\\*[\"']|\])?[ \t]*(?P<sep>:=|=>|={1,3}|!==?|:|[ \t]is[ \t])[ \t]*"
                    r"(?:(?P<q>\\*[\"'`])(?P<quoted>[^\"'`\n\\]{0,512})(?P=q)"
                    r"|(?P<bare>[^\s\"'`,;(){}\[\]<>\\|&]{1,512}))")
_FLAG_VALUE = re.compile(r"(?:[ \t]+|=)(?:(?P<q>[\"'])(?P<quoted>[^\"'\n\\]{0,512})(?P=q)"
                         r"|(?P<bare>[^\s\"'`,;(){}\[\]<>\\|&-][^\s\"'`,;(){}\[\]<>\\|&]{0,511}))")
_CODE_WORDS = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "str", "string", "bytes", "int", "integer",
    "bool", "boolean", "number", "float", "any", "object", "optional", "required", "secret", "secrets",
    "password", "passwd", "token", "key", "value", "self", "this", "new", "await", "async", "function",
    "lambda", "return", "get", "set", "env", "environ", "os", "getenv", "input", "getpass", "void", "char",
    "const", "let", "var", "def", "type", "dict", "list", "map", "text", "varchar", "empty", "default",
    "secretstr", "optional[str]", "str|none", "yes", "no", "on", "off", "enabled", "disabled", "redacted",
    "hidden", "masked", "omitted", "unset", "changeme_in_production", "string?", "any?", "record", "uuid"})
_CODE_RECEIVERS = frozenset({
    "self", "this", "cls", "args", "opts", "options", "config", "cfg", "conf", "settings", "env", "environ",
    "os", "process", "request", "req", "params", "props", "ctx", "context", "kwargs", "data", "form", "body",
    "st", "secrets", "credentials", "creds", "auth", "app", "user", "values", "payload", "response", "res",
    "obj", "item", "record", "row", "result", "session", "state", "store", "model", "cli", "parsed", "ns",
    "window", "document", "localstorage", "import", "module", "exports", "vars", "inputs", "github", "matrix"})


def _entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _high_entropy(token: str) -> bool:
    """Random-looking: digits, upper and lower case letters, high entropy, few separators.

    From 32 characters: > 4 bits/char; 20-31 characters (where camelCase names with a digit
    also reach 4 bits) also at least a quarter of the letters in each case and two digits.
    """
    if _RECORD_ID.match(token):
        return False  # harness record ids
    token = token[:256]  # a long random token is random in its first 256 characters too
    if sum(ch in "_-/" for ch in token) > len(token) // 8:
        return False  # snake_case / kebab-case identifiers, paths
    upper = sum(map(str.isupper, token))
    lower = sum(map(str.islower, token))
    digits = sum(map(str.isdigit, token))
    if not (upper and lower and digits):
        return False
    if len(token) >= 32:
        return _entropy(token) > 4.0
    letters = upper + lower
    return digits >= 2 and min(upper, lower) >= letters / 4 and _entropy(token) > 3.9


def _person(name: str, handle_ok: bool) -> bool:
    """A personal name (every word capitalised), or after ``Author:`` also a login handle."""
    words = name.split()
    if name.lower() in _NON_PERSONS or any(w.lower() in _NON_PERSONS for w in words[:1]):
        return False
    if all(w[0].isupper() and not w.isupper() or len(w) <= 2 and w.endswith(".") for w in words):
        return len(name) >= 3
    return handle_ok and len(words) == 1 and len(name) >= 3


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


_CARD_PREFIX = re.compile(r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|35|6(?:011|5|4[4-9]|2)"
                          r"|50(?:18|20|38)|6(?:304|759|76[1-3])")


def _card(candidate: str) -> str | None:
    groups = re.split(r"[ -]", candidate)
    if len(groups) > 1 and min(len(g) for g in groups) < 3:
        return None  # cards are grouped 4-4-4-4 or 4-6-5; "1 2 3 ..." is a table row
    digits = "".join(groups)
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits) or not _luhn(digits):
        return None
    if len(set(digits)) < 2:
        return None
    return candidate


def _iban(candidate: str) -> bool:
    s = candidate.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    n = "".join(str(int(ch, 36)) for ch in s[4:] + s[:4])
    return int(n) % 97 == 1


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _bitcoin(candidate: str) -> bool:
    if candidate.startswith("bc1"):
        return True  # bech32 alphabet, fixed prefix, lower case: specific enough
    n = 0
    for ch in candidate:
        n = n * 58 + _B58.index(ch)
    raw = n.to_bytes(25, "big") if n < 1 << 200 else b""
    return len(raw) == 25 and hashlib.sha256(hashlib.sha256(raw[:21]).digest()).digest()[:4] == raw[21:]


def _public_host(host: str) -> bool:
    h = host.lower().rstrip(".")
    return any(h == d or h.endswith("." + d) for d in PUBLIC_DOMAINS)


def _loopback(host: str) -> bool:
    h = host.strip("[]").lower()
    if h in ("localhost", "0.0.0.0", "255.255.255.255", "::", "::1"):
        return True
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


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


def _key_is_secret(key: str) -> bool:
    """Does this key name a secret (``DB_PASSWORD``, ``apiToken``), not a count of one?"""
    words = [w.lower() for w in _KEY_WORDS.findall(key.lstrip("-"))]
    if not words or any(w in _NOT_SECRET_WORDS for w in words):
        return False
    return _names_secret(key)


def _names_secret(name: str) -> bool:
    """Does this name contain a secret word (``password``, ``api`` + ``key`` ...)?"""
    words = [w.lower() for w in _KEY_WORDS.findall(name.lstrip("-"))]
    if words == ["pass"] and not name.startswith("-"):
        return False  # "--- PASS: TestFoo", a test verdict; DB_PASS and --pass are keys
    if any(w in _SECRET_WORDS or (len(w) > 6 and w.endswith(_SECRET_SUFFIXES)) for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def _value_is_secret(value: str, key: str, after: str, quoted: bool, prose: bool) -> bool:
    low = value.lower()
    if not value or _PLACEHOLDER.fullmatch(value) or low in _CODE_WORDS:
        return False
    if value.startswith(("$", "{{", "%(", "%{", "/", "./", "../", "~/", "...")) or re.fullmatch(r"%\w+%", value):
        return False  # variables, templates, paths
    if value.startswith("<") and value.endswith(">"):
        return False  # a documentation placeholder: <your-token>
    if not quoted and (value[0] in "#&*" or re.fullmatch(r"![A-Z]\w*", value)):
        return False  # YAML comments, anchors, aliases, tags
    if len(value) >= 3 and (set(value) <= set("*•#.") or set(value.lower()) == {"x"}):
        return False  # already masked
    if not quoted and (after[:1] in ("(", ".", "[", "{") or any(c in value for c in "()[]{}")):
        return False  # code: a call, an attribute or an index
    dotted = value.split(".")
    if len(dotted) > 1 and dotted[0].lower() in _CODE_RECEIVERS and all(p.isidentifier() for p in dotted):
        return False  # attribute access: config.api_key, process.env.TOKEN
    if value.isidentifier():
        words = [w for w in _KEY_WORDS.findall(value) if not w.isdigit()]
        if low == key.lower().lstrip("-") or (len(words) > 1 and _names_secret(value)):
            return False  # password=password, token = access_token, pw == hashed_password
    if prose and value.isalpha() and (value.islower() or value.istitle()):
        return False  # "the password is incorrect"
    return True


def _assignments(text: str, low: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, value) of the values of secret-named keys."""
    n = len(text)
    last = -1
    for m in _SECRET_WORD.finditer(low):
        if m.start() < last:
            continue
        s, e = m.start(), m.end()
        while s > 0 and text[s - 1] in _KEY_CHARS:
            s -= 1
        while e < n and text[e] in _KEY_CHARS:
            e += 1
        if s > 0 and text[s - 1] == "\\" and text[s] in "nrt" and s + 1 < m.start() + 1:
            s += 1  # "\npassword: x" inside a JSON string: the n belongs to the escape
        last = e
        key = text[s:e].rstrip(".")
        if not _key_is_secret(key):
            continue
        v = _VALUE.match(text, s + len(key))
        if v is None and key.startswith("-"):
            v = _FLAG_VALUE.match(text, s + len(key))
        if v is None:
            continue
        quoted = v.group("quoted") is not None
        if not quoted and v.groupdict().get("sep", "") in ("==", "===", "!=", "!=="):
            continue  # a comparison with a variable, not a literal
        value = v.group("quoted") if quoted else v.group("bare").rstrip(".:,")
        start = v.start("quoted") if quoted else v.start("bare")
        prose = "is" in (v.groupdict().get("sep") or "")
        after = text[start + len(value):start + len(value) + 1]
        if _value_is_secret(value, key, after, quoted, prose):
            yield start, start + len(value), value
            last = start + len(value)


def _contextual(text: str, low: str | None = None) -> Iterator[tuple[int, int, str, str]]:
    """(start, end, class, value) of every value a context rule marks."""
    low = _lower(text) if low is None else low
    if not _CONTEXT_TRIGGER.search(low):
        return
    for start, end, value in _assignments(text, low):
        yield start, end, "SECRET", value
    if "://" in text:
        for m in _URL_CREDENTIALS.finditer(text):
            user, secret = m.group("user"), m.group("secret")
            if not user and secret is None:
                continue
            if secret is None:  # https://TOKEN@host: a token in the user position
                if len(user) >= 16 or _high_entropy(user):
                    yield m.start("user"), m.end("user"), "SECRET", user
                elif user.lower() not in GENERIC_USERS:
                    yield m.start("user"), m.end("user"), "USER", user
                continue
            if user and user.lower() not in GENERIC_USERS:
                yield m.start("user"), m.end("user"), "USER", user
            yield m.start("secret"), m.end("secret"), "SECRET", secret
    for rx, words, where in ((_AUTH_HEADER, ("bearer", "authorization", "x-api-key"), low),
                             (_CLI_PASSWORD, ("mysql", "mariadb", "sshpass", " login", "machine"), text)):
        if any(w in low for w in words):
            for m in rx.finditer(where):
                group = next(g for g in ("secret", "secret2", "secret3") if m.groupdict().get(g))
                value = text[m.start(group):m.end(group)]
                if value.lower() not in _CODE_WORDS and not _PLACEHOLDER.fullmatch(value):
                    yield m.start(group), m.end(group), "SECRET", value
                user = m.groupdict().get("user")
                if user and user.lower() not in GENERIC_USERS and not _PLACEHOLDER.fullmatch(user):
                    yield m.start("user"), m.end("user"), "USER", user
    if "-u" in text or "--user" in text:
        for m in _CURL_USER.finditer(text):
            if m.group("user").isdigit() and m.group("secret").isdigit():
                continue  # docker -u 1000:1000
            if m.group("user").lower() not in GENERIC_USERS:
                yield m.start("user"), m.end("user"), "USER", m.group("user")
            yield m.start("secret"), m.end("secret"), "SECRET", m.group("secret")
    for rx, words in ((_HOME, ("users", "home")), (_USER_VARIABLE, ("user=", "name=", "login="))):
        if any(w in low for w in words):  # -Users-alice-proj: a dashed name ends at the first dash
            for m in rx.finditer(text):
                group = next(g for g in ("user", "winuser", "dashed") if m.groupdict().get(g))
                if group == "dashed" and not _DASHED_BEFORE.search(text, max(0, m.start() - 3), m.start()):
                    continue  # a kebab-case word (go-home-screen), not a project folder
                if rx is _USER_VARIABLE and not _starts_word(text, m.start()) and not (
                        text[m.start() - 1] == "_" and text[m.start() - 2:m.start() - 1].isupper()):
                    continue  # myUSER=, not USER= / DB_USER=
                user = m.group(group).rstrip(".-_ ")
                if user and user.lower() not in GENERIC_USERS and not user.isdigit():
                    yield m.start(group), m.start(group) + len(user), "USER", user


# ----------------------------------------------------------------- discovery
def _secrets(text: str, low: str) -> Iterator[tuple[str, str]]:
    if "PRIVATE KEY" in text or "PuTTY" in text:
        if any(True for _ in _DS_PRIVATE_KEY.analyze_string(text)):
            for rx in (_PRIVATE_KEY, _PUTTY_KEY):
                for m in rx.finditer(text):
                    yield "SSH_KEY", m.group(0).rstrip()
    if " AAAA" in text:
        for m in _PUBLIC_KEY.finditer(text):
            yield "SSH_KEY", m.group("key")
            comment = m.group("comment")
            if comment and "@" in comment:
                user, _, host = comment.partition("@")
                if user and user.lower() not in GENERIC_USERS:
                    yield "USER", user
                if host and "." not in host:
                    yield "HOST", host  # dotted: an address, found as EMAIL
            elif comment and comment.lower() not in GENERIC_USERS and len(comment) >= 3:
                yield "USER", comment
    if _DS_LONG_TOKEN.search(text) or "://" in text:
        for plugin in _DS_PLUGINS:
            gate = _DS_GATES.get(type(plugin))
            if gate is not None and not gate.search(low):
                continue
            for value in plugin.analyze_string(text):
                yield "SECRET", value.split()[0] if value.split() else value
    for line in _keyword_lines(text, low):
        for rx, group in CONFIG_DENYLIST_REGEX_TO_GROUP.items():  # KeywordDetector's patterns
            m = rx.search(line)
            if m is None:
                continue
            s = m.start()
            while s > 0 and line[s - 1] in _KEY_CHARS:
                s -= 1
            key = re.match(r"[\w.-]*", line[s:]).group(0)
            value = (m.group(group) or "").strip()
            first = value.split()[0].rstrip(".:,;") if value else ""
            if len(first) >= MIN_GLOBAL["SECRET"] and _key_is_secret(key) \
                    and _value_is_secret(first, key, "", False, False):
                yield "SECRET", first
    for value in _DS_ENTROPY.analyze_string(text):
        if _DS_ENTROPY.calculate_shannon_entropy(value) > _DS_ENTROPY.entropy_limit \
                and not _RECORD_ID.match(value) and not value.startswith("/") and value.count("/") <= len(value) // 8:
            yield "SECRET", value
    for rx in (_API_KEY, _WEBHOOK):
        for m in rx.finditer(text):
            yield "SECRET", m.group(0)
    for m in _LONG_TOKEN.finditer(text):
        if _high_entropy(m.group(0)):
            yield "SECRET", m.group(0)


def _keyword_lines(text: str, low: str) -> Iterator[str]:
    """Around each detect-secrets keyword, its line (its patterns are line-based), cut to
    some 80 characters before the keyword and 400 after (minified code has long lines)."""
    last = -1
    for m in _DS_KEYWORD_LINE.finditer(low):
        if m.start() <= last:
            continue
        start = max(text.rfind("\n", 0, m.start()) + 1, m.start() - 80)
        end = text.find("\n", m.end())
        end = min(len(text) if end < 0 else end, m.end() + 400)
        last = end
        yield text[start:end]


def _numbers(text: str, low: str) -> Iterator[tuple[str, str]]:
    end = -1
    for hint in _CARD_HINT.finditer(text):  # every card number holds 8 digits in two fours
        if hint.start() < end:
            continue
        start = max(_walk_back(text, hint.start(), _CARD_CHARS), hint.start() - 24)
        end = hint.end()
        while end < len(text) and end - hint.end() < 24 and text[end] in _CARD_CHARS:
            end += 1
        for m in _CARD.finditer(text, start, end):
            if _card(m.group(0)):
                yield "CARD", m.group(0)
    for m in _IBAN.finditer(text):
        if _iban(m.group(0)):
            yield "IBAN", m.group(0)
    for m in _BTC.finditer(text):
        if _bitcoin(m.group(0)):
            yield "CRYPTO", m.group(0)
    if "0x" in low:
        for m in _ETH.finditer(text):
            yield "CRYPTO", m.group(0)


def _identities(text: str, low: str) -> Iterator[tuple[str, str]]:
    if "@" in text:
        for m in _EMAIL.finditer(text):
            if m.group(0).lower() not in ROLE_EMAILS and not _IN_URL_AUTHORITY.search(text, max(0, m.start() - 256),
                                                                                        m.start()):
                yield "EMAIL", m.group(0)
        for m in _ANGLE_EMAIL.finditer(text):
            email = m.group("email").lower()
            before = _NAME_BEFORE.search(text, max(0, m.start() - 120), m.start())
            if before is None or email in ROLE_EMAILS or "noreply" in email:
                continue
            if _person(before.group("name"), handle_ok=bool(before.group("header"))):
                yield "PERSON", before.group("name")
        for m in _PROMPT.finditer(text):
            start = _walk_back(text, m.start(), _USER_CHARS)
            user = text[start:m.start()]
            if _PROMPT_USER.fullmatch(user) and (start == 0 or text[start - 1] not in "+"):
                if user not in GENERIC_USERS:
                    yield "USER", user
                yield "HOST", m.group("host")
    if "name" in low:
        for m in _PERSON_CONFIG.finditer(low):
            name = text[m.start("name"):m.end("name")]
            if _person(name, handle_ok=False):
                yield "PERSON", name
    for m in _PHONE.finditer(text):
        if 8 <= sum(ch.isdigit() for ch in m.group(0)) <= 15:
            yield "PHONE", m.group(0)
    if any(w in low for w in ("phone", "tel", "mobile", "cell", "fax", "whatsapp", "sms")):
        for m in _PHONE_CONTEXT.finditer(low):
            if 7 <= sum(ch.isdigit() for ch in m.group("number")) <= 15:
                yield "PHONE", m.group("number")


def _hosts(text: str, low: str) -> Iterator[tuple[str, str]]:
    if "://" in text:
        for m in _URL.finditer(text):
            host = m.group("host").rstrip(".")
            if host == "localhost" and m.group("port"):
                yield "PORT", f"localhost:{m.group('port')}"  # as a bare localhost:5173
            if _loopback(host) or _public_host(host):
                continue
            bare = host.strip("[]")
            if "." in host or ":" in bare:
                yield "HOST", bare
                if m.group("port"):
                    yield "PORT", f"{host}:{m.group('port')}"
    for m in _PORT_AT.finditer(text):
        if text[m.start() - 1] == "]":
            start = text.rfind("[", max(0, m.start() - 48), m.start())
        else:
            start = _walk_back(text, m.start(), _HOST_CHARS)
        host = text[start:m.start()] if start >= 0 else ""
        if not _HOST.fullmatch(host) or (start > 0 and text[start - 1] in "_@/"):
            continue
        if _loopback(host) and host != "localhost":
            continue
        if host == "localhost" or _ipv4(host) or host.startswith("[") or _host_like(host):
            if not _public_host(host):
                if host != "localhost":
                    yield "HOST", host.strip("[]")
                yield "PORT", f"{host}:{m.group('port')}"
    for m in _TLD_AT.finditer(text):
        start = _walk_back(text, m.start(), _HOST_CHARS)
        host = text[start:m.end()].lstrip(".-")
        if not _FQDN.fullmatch(host) or (start > 0 and text[start - 1] in "_@/\\"):
            continue
        labels = host.split(".")
        if _public_host(host):
            continue
        if _PRIVATE_SUFFIX.search(host) and (len(labels) >= 3 or host.islower()) \
                or len(labels) >= 3 or labels[-1] not in _CODE_TLDS:
            yield "HOST", host
    for m in _IPV4.finditer(text):
        if _ipv4(m.group(1)) and not _loopback(m.group(1)):
            yield "HOST", m.group(1)
    last = -1
    for m in _IPV6_AT.finditer(text):
        if m.start() < last:
            continue
        start = _walk_back(text, m.start(), _IPV6_CHARS)
        end = m.end()
        while end < len(text) and text[end] in _IPV6_TAIL:
            end += 1
        last = end
        candidate = text[start:end].rstrip(".:")
        if (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_.")) and _ipv6(candidate):
            yield "HOST", candidate
    if any(w in low for w in ("ssh", "scp", "sftp", "rsync", "mosh")):
        for m in _SSH_TARGET.finditer(text):
            user, host = m.group("user"), m.group("host") or m.group("bare")
            if user and user.lower() not in GENERIC_USERS:
                yield "USER", user
            if not _public_host(host) and not host.replace(".", "").isdigit():
                yield "HOST", host


def _starts_word(text: str, i: int) -> bool:
    """Nothing word-like before ``i`` (an escape such as a literal ``\\n`` counts as a break)."""
    if i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"):
        return True
    return i >= 2 and text[i - 2] == "\\" and text[i - 1] in "nrt"


_ESCAPE = re.compile(r"\\([\"\\/nrt'])")
_UNESCAPED = {"n": "\n", "r": "\r", "t": "\t"}


def _unescaped(text: str) -> str:
    """``text`` with JSON / shell string escapes resolved (``\\n`` -> newline, ``\\"`` -> ``"``)."""
    return _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(1)), text)


def _escaped_forms(original: str) -> list[str]:
    """How an original holding newlines, quotes or backslashes reads inside JSON strings."""
    once = json.dumps(original, ensure_ascii=False)[1:-1]
    if once == original:
        return []
    return [once, json.dumps(once, ensure_ascii=False)[1:-1], json.dumps(original)[1:-1]]


def _walk_back(text: str, end: int, chars: frozenset) -> int:
    """Start of the run of ``chars`` that ends at ``end``."""
    start = end
    while start > 0 and text[start - 1] in chars:
        start -= 1
    return start


def _ipv4(candidate: str) -> bool:
    parts = candidate.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) <= 255 and (p == "0" or not p.startswith("0")) for p in parts)


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
        if not original or key in self._originals or _PLACEHOLDER.fullmatch(original) \
                or (original.startswith("<") and _PLACEHOLDER.match(original)):
            return
        searched = len(original) >= MIN_GLOBAL.get(cls, 1)
        if placeholder is None:
            self._per_class[cls] += 1
            placeholder = f"<{cls}_{self._per_class[cls]}>"
        self._originals[key] = (cls, placeholder, searched)
        self._pattern = None
        if alias_of is None and searched and cls != "PORT":
            for alias in _escaped_forms(original):
                self._add(cls, alias, placeholder, alias_of=original)
        if cls == "USER" and searched and alias_of is None and re.search(r"[._]", original):
            # Claude Code project folders spell /Users/j.doe/x as -Users-j-doe-x
            self._add(cls, re.sub(r"[._]", "-", original), placeholder, alias_of=original)

    def discover(self, text: str) -> None:
        """Find the sensitive strings of ``text``, also inside JSON-escaped strings within it
        (a tool call's arguments), where ``\\n`` glues a letter to the next word."""
        self._discover(text)
        view = text
        for _ in range(2):  # escaped once (a tool call's JSON arguments), or twice
            view = "\n".join(_unescaped(line) for line in view.split("\n") if "\\" in line)
            if not view:
                break
            self._discover(view)

    def _discover(self, text: str) -> None:
        add = self._add
        low = _lower(text)
        for finder in (_numbers, _secrets, _identities, _hosts):
            for cls, value in finder(text, low):
                if cls != "SSH_KEY" and cls != "PORT" and len(value) < MIN_GLOBAL.get(cls, 1):
                    continue  # too short to search for on its own: only context rules place it
                add(cls, value)
        # longest first: /Users/j.doe (and its alias j-doe) before the "j" of -Users-j-doe-proj
        for _, _, cls, value in sorted(_contextual(text, low), key=lambda c: -len(c[3])):
            add(cls, value)

    # -- replacement ------------------------------------------------------------------
    # Originals are found through an index of their first characters (lower case): one
    # regex of short prefixes finds candidate positions in the lowered text, and each
    # candidate is checked in full (case, token boundaries) — a regex of every original
    # would take seconds to compile when a transcript holds thousands of long tokens.
    def _compiled(self) -> re.Pattern:
        if self._pattern is None:
            index: dict[str, list[str]] = {}
            for key, (cls, _, searched) in self._originals.items():
                if cls != "PORT" and searched:  # ports: see _port_sub; short values: context only
                    index.setdefault(key[:_PREFIX].lower(), []).append(key)
            for keys in index.values():
                keys.sort(key=len, reverse=True)
            self._index = index
            self._prefix_lengths = sorted({len(p) for p in index}, reverse=True)
            self._pattern = re.compile(_trie_pattern(index)) if index else re.compile(r"(?!x)x")
        return self._pattern

    def _matches(self, text: str) -> Iterator[tuple[int, str]]:
        """(position, key) of every original in ``text``, left to right, not overlapping."""
        if not self._originals:
            return
        pattern = self._compiled()
        low = _lower(text)
        index, n, i = self._index, len(text), 0
        while True:
            m = pattern.search(low, i)
            if m is None:
                return
            p = m.start()
            found = None
            for length in self._prefix_lengths:
                for key in index.get(low[p:p + length], ()):
                    end = p + len(key)
                    cls = self._originals[key][0]
                    if (low[p:end] == key if cls in CASELESS else text.startswith(key, p)) \
                            and _bounded(cls, key, text, p, end, n):
                        found = key
                        break
                if found:
                    break
            if found is None:
                i = p + 1
                continue
            yield p, found
            i = p + len(found)

    def apply(self, text: str) -> str:
        out = self._apply_contextual(text)  # first, while every context is intact
        pieces, pos = [], 0
        for p, key in self._matches(out):
            cls, placeholder, _ = self._originals[key]
            pieces += (out[pos:p], placeholder)
            self._replacements[cls] += 1
            pos = p + len(key)
        if pieces:
            out = "".join(pieces) + out[pos:]
        # ports of redacted host:port pairs: "<HOST_1>:8080" -> "<HOST_1>:<PORT_1>"
        if "PORT" in self._per_class:
            out = _HOST_THEN_PORT.sub(self._port_sub, out)
            out = _LOCALHOST_PORT.sub(self._port_sub, out)
        return out

    def _apply_contextual(self, text: str) -> str:
        for _ in range(4):  # a replacement can expose a context it overlapped
            pieces, pos = [], 0
            for start, end, cls, value in sorted(_contextual(text)):
                entry = self._lookup(value)
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
        """Classes of the originals still in ``text`` (one entry per original)."""
        found = [self._originals[key][0] for key in {key for _, key in self._matches(text)}]
        seen = set()
        for _, _, _, value in _contextual(text):
            entry = self._lookup(value)
            if entry is not None and not entry[2] and value not in seen:
                seen.add(value)
                found.append(entry[0])
        if "PORT" in self._per_class:
            for rx in (_HOST_THEN_PORT, _LOCALHOST_PORT):
                for m in rx.finditer(text):
                    if self._port_sub(m) != m.group(0):
                        found.append("PORT")
        return found

    def verify(self, text: str, where: str = "") -> None:
        """Raise :class:`RedactionLeak` if any discovered original appears in ``text``."""
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
            if _key_is_secret(key) and _value_is_secret(value.strip(), key, "", True, False):
                self._add("SECRET", value)
        self.discover("\n".join(texts))

    def apply_object(self, obj):
        """``obj`` with keys and string values replaced; keys that become equal get ``~2``, ``~3``."""
        if isinstance(obj, str):
            return self.apply(obj)
        if isinstance(obj, list):
            return [self.apply_object(v) for v in obj]
        if not isinstance(obj, dict):
            return obj
        out = {}
        for k, v in obj.items():
            new_k = self.apply(k) if isinstance(k, str) else k
            base, n = new_k, 2
            while new_k in out:
                new_k, n = f"{base}~{n}", n + 1
            entry = self._lookup(v.strip()) if isinstance(v, str) and isinstance(k, str) and _key_is_secret(k) else None
            if entry is not None:
                out[new_k] = entry[1]
                self._replacements[entry[0]] += 1
            else:
                out[new_k] = self.apply_object(v)
        return out

    def object_survivors(self, obj) -> list[str]:
        """:meth:`survivors` over every key and string value of ``obj``."""
        texts: list[str] = []
        found = []
        for key, value in _pairs(obj, texts):
            entry = self._lookup(value.strip())
            if entry is not None and not entry[2] and _key_is_secret(key):
                found.append(entry[0])
        return found + self.survivors("\n".join(texts))


def _pairs(obj, texts: list[str]) -> Iterator[tuple[str, str]]:
    """(key, string value) of every dict entry in ``obj``; every key and string into ``texts``."""
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
                    yield k, v
            yield from _pairs(v, texts)


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
    if start > 0 and _TOKEN.match(original[0]) and _TOKEN.match(text[start - 1]):
        return False
    return not (end < n and _TOKEN.match(original[-1]) and _TOKEN.match(text[end]))


_HOST_THEN_PORT = re.compile(r"(<HOST_\d+>):(\d{2,5})\b")
_LOCALHOST_PORT = re.compile(r"(?<![\w.-])(localhost):(\d{2,5})\b")


def redact(text: str, redactor: Redactor | None = None) -> tuple[str, RedactionReport]:
    """Redact one text (a fresh redactor unless one is given); verify; report."""
    r = redactor or Redactor()
    out = r.redact(text)
    return out, r.report()
