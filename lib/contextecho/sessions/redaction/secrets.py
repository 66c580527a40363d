"""Keys and tokens known by their shape, or by the service or id they stand beside.

``find(text, low)`` yields ``(class, value)``:

- ``SSH_KEY``: PEM / OpenSSH / PGP / PuTTY private-key blocks (also cut off before their
  END line, as ``head -5 id_rsa`` prints them); ``ssh-rsa`` / ``ssh-ed25519`` /
  ``ecdsa-*`` public keys, and the ``user@host`` of their comment as ``USER`` / ``HOST``.
- ``SECRET`` by shape: detect-secrets (Yelp)'s regex plugins (AWS, Azure, Artifactory,
  basic-auth URLs, Cloudant, Discord, GitHub, GitLab, IBM, JWT, Mailchimp, npm, OpenAI,
  PyPI, SendGrid, Slack, SoftLayer, Square, Stripe, Telegram, Twilio), run in-process with
  ``analyze_string`` (no verification requests, no files, no git), its keyword detector and
  its base64 high-entropy detector; shapes it lacks (``sk-``, ``sk-ant-``, ``github_pat_``,
  ``AIza``, ``ya29.``, ``hf_``, ``xox?-``, Stripe ``sk_/rk_/pk_/whsec_``, full JWTs,
  Mailgun ``key-...``, Heroku ``HRKU-...`` ...); Slack / Discord / Teams webhook URLs;
  unquoted high-entropy tokens (>= 20 characters mixing digits, upper and lower case).
- ``SECRET`` by position: a 32-hex Twilio auth token within 200 characters of its
  ``AC...`` account SID; a UUID a Heroku CLI prints as a token (within 200 characters
  after ``heroku auth:token``, ``authorizations:create``, ``Token:`` in a text that names
  Heroku; not a record's own ``"uuid": ...``); a 40-character AWS secret
  key beside its ``AKIA...`` key id (``credentials.csv``); a random token (digits and
  letters, >= 20 characters, not a 40-hex commit or a content digest) within a few words
  after a service's name (``mailgun``, ``datadog``, ``sendgrid`` ...).
"""
from __future__ import annotations

import re
from typing import Iterator

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

from .secret_names import KEY_CHARS, key_is_secret, value_is_secret
from .text import RECORD_ID, entropy, high_entropy

MIN_SECRET = 6  # shorter values are too common to be searched for on their own

# ----------------------------------------------------------------- detect-secrets
# Regex plugins, run with analyze_string (pure regex; analyze_line could verify online).
_DS_PLUGINS = (ArtifactoryDetector(), AWSKeyDetector(), AzureStorageKeyDetector(), BasicAuthDetector(),
               CloudantDetector(), DiscordBotTokenDetector(), GitHubTokenDetector(), GitLabTokenDetector(),
               IbmCloudIamDetector(), IbmCosHmacDetector(), JwtTokenDetector(), MailchimpDetector(),
               NpmDetector(), OpenAIDetector(), PypiTokenDetector(), SendGridDetector(), SlackDetector(),
               SoftlayerDetector(), SquareOAuthDetector(), StripeDetector(), TelegramBotTokenDetector(),
               TwilioKeyDetector())
# Plugins whose every pattern needs a long token or a keyword: skipped on texts without one.
_DS_TOKEN_OR_URL = re.compile(r"[A-Za-z0-9_\-+/=]{20,}|://")
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
_DS_ENTROPY = Base64HighEntropyString()
_MIN_ENTROPY_CHARS = int(2 ** _DS_ENTROPY.entropy_limit) + 1
_DS_PRIVATE_KEY = PrivateKeyDetector()

# ----------------------------------------------------------------- own shapes
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
    r"|key-[0-9a-zA-Z]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}|HRKU-[A-Za-z0-9_-]{20,}"
    r"|NRAK-[A-Z0-9]{27}|dd[ap]_[A-Za-z0-9]{20,}|glc_[A-Za-z0-9+/=]{30,}|lin_api_[A-Za-z0-9]{30,}"
    r"|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}|SK[0-9a-fA-F]{32}|AC[0-9a-f]{32}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)(?![A-Za-z0-9])")
_WEBHOOK = re.compile(r"https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]+"
                      r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"
                      r"|[\w.-]+\.webhook\.office\.com/[^\s\"'<>\\]+|outlook\.office\.com/webhook/[^\s\"'<>\\]+)")
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9_+=/-])[A-Za-z0-9_+/-]{20,}={0,3}(?![A-Za-z0-9_+=/-])")

# ----------------------------------------------------------------- tokens by position
_NEAR = 200  # characters around a service's id or name where its token stands
_TWILIO_SID = re.compile(r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])")
_HEX32 = re.compile(r"(?<![A-Za-z0-9])[0-9a-fA-F]{32}(?![A-Za-z0-9])")
_UUID = re.compile(r"(?<![A-Za-z0-9-])[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![A-Za-z0-9-])")
_HEROKU_TOKEN_CONTEXT = re.compile(r"auth:token|authorizations:(?:create|info|update)|heroku_api_key"
                                   r"|\btoken[ \t]*:|api[ _]key")  # lowered
_ID_KEY_BEFORE = re.compile(r"(?:uuid|id|session|request|trace|run)[\"']?[ \t]*[:=][ \t]*[\"']?$", re.I)
_AWS_KEY_ID = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_SERVICES = re.compile(
    r"\b(?:twilio|heroku|mailgun|sendgrid|stripe|datadog|pagerduty|new_?relic|sentry|algolia|pusher|cloudflare"
    r"|digitalocean|linode|vercel|netlify|okta|auth0|shopify|dropbox|mapbox|mailchimp|postmark|sparkpost|nexmo"
    r"|vonage|plaid|segment|mixpanel|amplitude|rollbar|bugsnag|circleci|openai|anthropic|replicate|cohere"
    r"|pinecone|supabase|firebase|airtable|notion|asana|trello|atlassian|telegram|discord|twitch|spotify"
    r"|brevo|sendinblue|mandrill|clearbit|intercom|zendesk|hubspot|salesforce|contentful|sanity|fastly"
    r"|snyk|sonar(?:qube|cloud)?|ngrok|tailscale|doppler|infisical|1password|bitwarden)\b")  # lowered
_SERVICE_TOKEN = re.compile(r"(?<![A-Za-z0-9_.+=-])[A-Za-z0-9][A-Za-z0-9_.+=-]{19,255}")
_DIGEST_BEFORE = re.compile(r"(?:sha\d{1,3}|md5|blake2b?|digest|integrity|commit|revision|rev|etag)[\s:=@\"'-]*$", re.I)
_GIT_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def find(text: str, low: str) -> Iterator[tuple[str, str]]:
    """(class, value) of every key and token of ``text``; see the module doc."""
    yield from _keys(text)
    lines = _token_lines(text)
    if lines:
        lines_low = lines.lower()
        for plugin in _DS_PLUGINS:
            gate = _DS_GATES.get(type(plugin))
            if gate is not None and not gate.search(lines_low):
                continue
            for value in plugin.analyze_string(lines):
                yield "SECRET", value.split()[0] if value.split() else value
    yield from _keyword_values(text, low)
    for value in _DS_ENTROPY.analyze_string(lines):  # base64 runs of 23 characters and more
        # the entropy of a string is at most log2 of its distinct characters: 4.5 bits need 23
        if len(value) >= _MIN_ENTROPY_CHARS and len(set(value)) >= _MIN_ENTROPY_CHARS \
                and _DS_ENTROPY.calculate_shannon_entropy(value) > _DS_ENTROPY.entropy_limit \
                and not RECORD_ID.match(value) and not value.startswith("/") and value.count("/") <= len(value) // 8:
            yield "SECRET", value
    for rx in (_API_KEY, _WEBHOOK):
        for m in rx.finditer(text):
            yield "SECRET", m.group(0)
    for m in _LONG_TOKEN.finditer(text):
        if high_entropy(m.group(0)):
            yield "SECRET", m.group(0)
    yield from _beside_their_service(text, low)


def _token_lines(text: str) -> str:
    """The lines of ``text`` that hold a long token or a URL: detect-secrets reads a text
    line by line, and each of its regex plugins needs one (most lines hold neither)."""
    kept, end = [], -1
    for m in _DS_TOKEN_OR_URL.finditer(text):
        if m.start() < end:
            continue  # on the line already kept
        start = text.rfind("\n", max(end, 0), m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        kept.append(text[start:end])
    return "\n".join(kept)


def _keys(text: str) -> Iterator[tuple[str, str]]:
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
                host = re.split(r"[/:]", host)[0]
                if user:
                    yield "USER", user
                if host and "." not in host:
                    yield "HOST", host  # dotted: an address, found as EMAIL
            elif comment and len(comment) >= 3:
                yield "USER", comment


def _keyword_values(text: str, low: str) -> Iterator[tuple[str, str]]:
    """detect-secrets' keyword patterns, on the lines around each of its keywords."""
    for line in _keyword_lines(text, low):
        for rx, group in CONFIG_DENYLIST_REGEX_TO_GROUP.items():
            m = rx.search(line)
            if m is None:
                continue
            s = m.start()
            while s > 0 and line[s - 1] in KEY_CHARS:
                s -= 1
            key = re.match(r"[\w.-]*", line[s:]).group(0)
            value = (m.group(group) or "").strip()
            first = value.split()[0].rstrip(".:,;") if value else ""
            if len(first) >= MIN_SECRET and key_is_secret(key) and value_is_secret(first, key, "", False, False):
                yield "SECRET", first


def _keyword_lines(text: str, low: str) -> Iterator[str]:
    """Around each detect-secrets keyword, its line (its patterns are line-based), cut to
    some 80 characters before the keyword and 400 after (minified code has long lines)."""
    last = -1
    for m in _DS_KEYWORD_LINE.finditer(low):
        if m.start() <= last:
            continue
        start = max(text.rfind("\n", max(0, m.start() - 80), m.start()) + 1, m.start() - 80)
        end = text.find("\n", m.end())
        end = min(len(text) if end < 0 else end, m.end() + 400)
        last = end
        yield text[start:end]


def _beside_their_service(text: str, low: str) -> Iterator[tuple[str, str]]:
    """Tokens known by what stands beside them; see the module doc."""
    if "AC" in text:
        for sid in _TWILIO_SID.finditer(text):
            for m in _HEX32.finditer(text, max(0, sid.start() - _NEAR), sid.end() + _NEAR):
                if m.start() != sid.start() + 2:
                    yield "SECRET", m.group(0)
    if "heroku" in low or "HRKU" in text:
        for ctx in _HEROKU_TOKEN_CONTEXT.finditer(low):
            for m in _UUID.finditer(text, ctx.end(), ctx.end() + _NEAR):
                if not _ID_KEY_BEFORE.search(text, max(0, m.start() - 24), m.start()):
                    yield "SECRET", m.group(0)  # not a record's own id
    if "AKIA" in text or "ASIA" in text:
        for key_id in _AWS_KEY_ID.finditer(text):
            for m in _AWS_SECRET.finditer(text, key_id.end(), key_id.end() + 120):
                value = m.group(0)
                if any(c.isdigit() for c in value) and any(c.isupper() for c in value) \
                        and any(c.islower() for c in value):
                    yield "SECRET", value
    for svc in _SERVICES.finditer(low):
        end = min(len(text), svc.end() + 120)
        for m in _SERVICE_TOKEN.finditer(text, svc.end(), end):
            token = m.group(0).rstrip(".")
            if _token_like(token) and not _DIGEST_BEFORE.search(text, max(0, m.start() - 16), m.start()):
                yield "SECRET", token


def _token_like(token: str) -> bool:
    """Random enough to be a credential: letters and digits mixed, few separators, not a
    commit hash, a record id, a version or a dotted name."""
    if len(token) < 20 or RECORD_ID.match(token) or _GIT_SHA.fullmatch(token.lower()):
        return False
    if "/" in token or token.count(".") > 2 or sum(c in "_-." for c in token) > len(token) // 6:
        return False  # paths, dotted names, snake/kebab identifiers
    if sum(len(p) >= 3 and p.isalpha() for p in re.split(r"[_.-]", token)) >= 2:
        return False  # words joined: claude-3-5-sonnet-20241022
    digits = sum(c.isdigit() for c in token)
    letters = sum(c.isalpha() for c in token)
    return digits >= 3 and letters >= 3 and entropy(token) >= 3.3
