"""Who someone is: e-mail addresses, personal names beside them, login names.

``find(text, low)`` yields ``(class, value)`` searched for everywhere; ``context(text,
low)`` yields ``(start, end, class, value)`` spans for user names known by their place in
a path (short ones are replaced there only).

=======  ====================================================================================
class    found by
=======  ====================================================================================
EMAIL    addresses, except role addresses of public services (``noreply@anthropic.com``)
         and the ``user:pass@host`` of a URL
PERSON   a name beside an address in any layout: ``Jane Doe <jane@x.org>``,
         ``Jane Doe (jane@x.org)``, ``jane@x.org (Jane Doe)``, ``Jane Doe, jane@x.org``,
         table rows (``| Jane Doe | Engineer | jane@x.org |``, tab-separated too), CSV rows
         (``Jane,Doe,jane@x.org``: each name cell), markdown (``**Jane Doe**``,
         ``[Jane Doe](mailto:...)``),
         ``"name": "Jane Doe", "email": "jane@x.org"`` / ``Name: Jane Doe`` a few lines
         from ``Email: ...``, a signature block (the name line after ``Regards,`` /
         ``Thanks,`` / ``--``, or the first line of the block that ends in the address);
         git ``Author:`` / ``Co-authored-by:`` lines, ``user.name``, ``GIT_AUTHOR_NAME=``.
         Without an address, where the context says a person: the name line of a
         signature (after ``Best regards,`` / ``Thanks,`` / ``Cheers,`` / ``--`` ...),
         a sign-off on one line (``Thanks, Anna``), a greeting (``Hi Anna,`` /
         ``Dear Dr. Smith,``), trailers and headers
         (``Author:``, ``Signed-off-by:``, ``Co-authored-by:``, ``Reviewed-by:`` ...,
         ``"author": "Jane Doe"``, ``__author__ = ...``), also in a file's body as a tool
         call writes it (:data:`~.text.GUTTER`).
         A name is 1-4 capitalised words (particles such as ``van``, ``de`` allowed),
         never a bot or a product (``Claude``, ``GitHub Actions``); a name of one word
         only after a closing or a greeting, and not a word of a reply (``Thanks,
         Done``, ``Hello World!``)
USER     the user segment of home paths in every form: ``/Users/x``, ``/home/x``,
         ``C:\\Users\\x`` and ``c:/users/x`` in any case, ``/mnt/c/Users/x``,
         ``/c/Users/x``, ``\\\\wsl$\\Ubuntu\\home\\x``, a name with a space
         (``C:\\Users\\Jane Smith``, ``/Users/Jane Smith/``), dashed Claude Code project
         folders ``-Users-x-proj`` / ``-home-x-proj`` (``.``/``_`` as ``-``), ``~x/`` and
         ``cd ~x``; shell prompts ``user@host:~$``; ``USER=x`` / ``DB_USER=x`` /
         ``?user=x`` variables
=======  ====================================================================================
"""
from __future__ import annotations

import re
from typing import Iterator

from .text import EOL, LINE_BODY, PLACEHOLDER, Span, at_line_starts, starts_word, walk_back

ROLE_EMAILS = frozenset({"noreply@anthropic.com", "git@github.com", "git@gitlab.com",
                         "git@bitbucket.org", "noreply@github.com", "noreply@openai.com"})
_EMAIL = re.compile(r"(?:(?<![A-Za-z0-9._%+\\-])|(?<=\\[nrt]))[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
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
                          "committer", "from", "to", "cc", "name", "your name", "user", "mailto", "email",
                          "e-mail", "mail", "contact", "support", "team", "admin", "sales", "info", "phone",
                          "regards", "best regards", "kind regards", "thanks", "cheers", "sincerely", "best"})
# a capitalised word of a name; particles between them
_NAME_WORD = r"[A-Z\u00c0-\u00de][\w'\u2019.-]*"
_PARTICLE = r"(?:van|von|de|da|del|della|der|den|di|du|la|le|bin|al|el|ten|ter|y)"
_NAME = re.compile(rf"{_NAME_WORD}(?:[ \t]+(?:{_PARTICLE}[ \t]+)?{_NAME_WORD}){{0,3}}")
_NAME_AT_END = re.compile(rf"(?P<name>{_NAME.pattern})[\"'\u201d]?[ \t]*(?:[(<\[,:;|\u2013\u2014-][ \t]*|[ \t]+(?:at|via|on)[ \t]+"
                          r"|[ \t]+)[\"'\u201c]?(?:mailto:)?$")
_NAME_AFTER = re.compile(rf"^[ \t]*[>)\]]?[ \t]*(?:[(\[,|\u2013\u2014-][ \t]*)?[\"'\u201c]?(?P<name>{_NAME.pattern})[\"'\u201d]?[ \t]*(?:[)\]|,;]|$)")
_NAME_FIELD = re.compile(rf"(?:\b|_)(?i:full[ _-]?)?(?i:name)(?:\\*[\"'])?[ \t]*[:=][ \t]*(?:\\*[\"'])?(?P<name>{_NAME.pattern})")
_CLOSINGS = (r"--|(?:best|kind|warm(?:est)?|many)?[ \t]*(?:regards|wishes)|all the best|best|thanks(?: again| a lot)?"
             r"|thank you|many thanks|cheers|sincerely|yours(?: truly| sincerely)?|cordialement|bien [àa] vous"
             r"|mit freundlichen gr[üu](?:ß|ss)en|(?:viele |liebe |beste )?gr[üu](?:ß|ss)e|saludos|un saludo"
             r"|cordiali saluti|met vriendelijke groet(?:en)?|groeten|mvh|hälsningar")
_CLOSING = re.compile(rf"^(?:{_CLOSINGS})[ \t]*[,!.]?[ \t]*$", re.I)
# a name alone on its line (a role or a company may follow: "Jane Doe | Acme", "Jane Doe, CTO")
_NAME_END = r"(?=$|\r?\n|\\[rn]|\\*[\"'/]|,[ \t]|[ \t]+[|\u2013\u2014-][ \t]|[ \t]*[<(])"
_NAME_LINE = rf"[ \t]*(?P<name>{_NAME.pattern})[ \t]*" + _NAME_END
# the name line of a signature: after a closing line (and a blank line, if any)
# Line-anchored (see text.at_line_starts), each with the words it needs (lowered text).
_SIGNED = re.compile(LINE_BODY + rf"[ \t]*(?P<closing>(?i:{_CLOSINGS}))[ \t]*[,!.]?[ \t]*{EOL}"
                     rf"(?:{LINE_BODY}[ \t]*{EOL})?" + LINE_BODY + _NAME_LINE)
# (a closing word at the end of its line; the patterns of hits start with a literal, so that
# the search skips to it)
_SIGNED_HIT = re.compile(r"(?:regards|wishes|best|thanks|thank you|cheers|sincerely|yours|truly|cordialement|vous"
                         r"|gr[üu](?:ß|ss)(?:en|e)|saludos?|saluti|groet(?:en)?|mvh|hälsningar|--)[ \t]*[,!.]?[ \t]*"
                         r"(?:\r?\n|\\r?\\n)")
_GREETING = re.compile(LINE_BODY + r"[ \t]*(?i:hi|hello|hey|dear|hallo|hola|bonjour|salut|ciao|moin|hej"
                       rf"|good (?:morning|afternoon|evening))[ \t]+(?P<name>{_NAME.pattern})[ \t]*[,:]")
_GREETING_HIT = re.compile(r"(?:hi|hello|hey|dear|hallo|hola|bonjour|salut|ciao|moin|hej"
                           r"|good (?:morning|afternoon|evening))[ \t]+[^\n\\,:]{1,80}[,:]")
# a sign-off on one line: "Thanks, Anna" / "Cheers, Bob Marlowe" (the name ends the line)
_SIGNED_INLINE = re.compile(LINE_BODY + r"[ \t]*(?P<closing>(?i:(?:best|kind|warm(?:est)?|many)?[ \t]*regards|best|thanks"
                            r"|thank you|many thanks|cheers|sincerely))[ \t]*[,!][ \t]+"
                            rf"(?P<name>{_NAME.pattern})[ \t]*[.!]?" + _NAME_END)
_SIGNED_INLINE_HIT = re.compile(r"(?:regards|best|thanks|thank you|cheers|sincerely)[ \t]*[,!][ \t]+[^\n\\]{2,60}"
                                r"(?:$|\r?\n|\\[rn]|\\*[\"'])", re.M)
_TRAILER = re.compile(LINE_BODY + r"[ \t]*(?i:author|authors|co-authored-by|signed-off-by|reviewed-by|acked-by|tested-by"
                      r"|reported-by|suggested-by|helped-by|committer|maintainer|written by|maintained by)[ \t]*:"
                      + _NAME_LINE)
_TRAILER_HIT = re.compile(r"author|-by[ \t]*:|committer|maintain|written by")
# "author": "Jane Doe", __author__ = 'Jane Doe', authors = ["Jane Doe <...>"]: the key's word
# found first (lowered), then what follows it
_AUTHOR_KEY = re.compile(r"author|maintainer")
_AUTHOR_VALUE = re.compile(r"s?(?:__)?(?:\\*[\"'])?[ \t]*[:=][ \t]*\[?[ \t]*"
                           rf"\\*[\"'](?P<name>{_NAME.pattern})[ \t]*(?=\\*[\"']|<)")
# words a reply or a greeting is made of, capitalised, that name no one: Thanks, Done. / Hello World!
_NOT_FIRST_NAMES = frozenset({
    "world", "there", "all", "everyone", "everybody", "folks", "team", "guys", "friends", "sir", "madam",
    "sirs", "customer", "colleagues", "reviewers", "maintainers", "yes", "ok", "okay", "great", "perfect",
    "sure", "good", "nice", "cool", "awesome", "sounds", "please", "sorry", "hello", "hi", "bye", "later",
    "again", "done", "fixed", "agreed", "noted", "confirmed", "approved", "merged", "see", "will", "let",
    "this", "that", "here", "we", "you", "i", "it", "me", "us", "our", "your", "my", "anonymous", "unknown",
    "everyone", "hiring", "manager", "users", "user", "developers", "contributors", "maintainer", "admins",
    "mate", "man", "buddy", "pal", "friend", "dude", "anyway", "though", "much", "happy", "coding", "hacking",
    "work", "job", "day", "luck", "weekend", "holidays", "lot", "lots", "help", "feedback", "review", "note",
    "update", "input", "so", "in", "advance", "for", "the", "a", "all", "both", "you", "everybody"})
# words of roles, statuses and headings that title-case a cell or a line but name no one
_NOT_NAME_WORDS = frozenset({
    "in", "on", "at", "of", "the", "and", "or", "for", "to", "by", "with", "a", "an", "is", "not", "new", "old",
    "progress", "done", "todo", "open", "closed", "pending", "active", "inactive", "blocked", "review", "ready",
    "owner", "owners", "engineer", "engineering", "manager", "management", "lead", "leader", "head", "director",
    "staff", "senior", "junior", "principal", "developer", "developers", "designer", "product", "project",
    "officer", "chief", "vice", "president", "intern", "consultant", "analyst", "architect", "scientist",
    "research", "researcher", "department", "office", "company", "inc", "ltd", "llc", "gmbh", "corp", "group",
    "university", "institute", "lab", "labs", "services", "service", "solutions", "systems", "technologies",
    "account", "accounts", "billing", "security", "operations", "ops", "devops", "qa", "it", "hr", "legal",
    "marketing", "finance", "customer", "success", "help", "desk", "helpdesk", "notifications", "alerts",
    "no", "reply", "noreply", "do", "unsubscribe", "contact", "us", "about", "home", "main", "default"})
_HEADER_WORDS = frozenset({"first", "last", "firstname", "lastname", "given", "family", "surname", "full", "title",
                           "role", "company", "department", "status", "active", "yes", "no", "true", "false"})
_LINE_BREAK = re.compile(r"\r?\n|\\n")
_MARKUP = re.compile(r"[*_`\[\]]")
_CELL_SPLIT = re.compile(r"[,;\t]|\\t")
_CAPITAL = re.compile(r"(?<![\w'])[A-Z\u00c0-\u00de]")

_SEG = r"[^\\/\n\r\t\"'<>:|*?\s]+"  # a Windows path segment without spaces
_HOME = re.compile(r"/(?:Users|home)/(?P<spaced>[A-Z][\w.-]*(?: [A-Z][\w.-]*){1,2})(?=/)"
                   r"|/(?:Users|home)/(?P<user>[A-Za-z0-9._-]+)"
                   r"|(?:(?<![\w/])(?:[A-Za-z]:|/mnt/[a-z]|/[a-z])[\\/]+(?i:users)|\\+(?i:users)|\\+(?i:home))[\\/]+"
                   rf"(?:(?P<winspaced>{_SEG}(?: {_SEG}){{1,3}})(?=[\\/])|(?P<winuser>{_SEG}))"
                   r"|-(?:Users|home)-(?P<dashed>[A-Za-z0-9._]+)")
_TILDE_USER = re.compile(r"(?:(?<=[\s\"'=:(])|^)~(?P<user>[a-z_][a-z0-9_.-]{1,31})(?=/)"
                         r"|\b(?:cd|ls|pushd|chown|du|find)[ \t]+~(?P<user2>[a-z_][a-z0-9_.-]{1,31})(?=[\s\"';&|)]|$)", re.M)
_DASHED_BEFORE = re.compile(r"(?:^|[/\\\s\"'=:(\[]|\\[nrt])(?:[A-Za-z]-)?$")  # -home-x-proj starts a path segment
_USER_VARIABLE = re.compile(r"(?:USER|USERNAME|LOGNAME|LOGIN|(?<=[?&;])(?:user|username|login))"
                            r"=[\"']?(?P<user>[A-Za-z][\w.-]{0,31})")  # USER=, DB_USER=, ?user= in URLs
# user@host of shell prompts ("alice@laptop:~/src$") and key comments; host has no dot.
_PROMPT = re.compile(r"@(?P<host>[A-Za-z][A-Za-z0-9-]{1,62})(?=:[~/]|\s*[$#%>]\s)")
_PROMPT_USER = re.compile(r"[a-z_][a-z0-9_.-]{1,31}")
_USER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_USER_GROUPS = ("spaced", "user", "winspaced", "winuser", "dashed")


def find(text: str, low: str) -> Iterator[tuple[str, str]]:
    """(class, value) of addresses, the names beside them, prompt users; see the module doc."""
    if "@" in text:
        emails = [m for m in _EMAIL.finditer(text)
                  if m.group(0).lower() not in ROLE_EMAILS
                  and not _IN_URL_AUTHORITY.search(text, max(0, m.start() - 256), m.start())]
        for m in emails:
            yield "EMAIL", m.group(0)
        for m in _ANGLE_EMAIL.finditer(text):
            email = m.group("email").lower()
            before = _NAME_BEFORE.search(text, max(0, m.start() - 120), m.start())
            if before is None or email in ROLE_EMAILS or "noreply" in email:
                continue
            if _person(before.group("name"), handle_ok=bool(before.group("header"))):
                yield "PERSON", before.group("name")
        for m in emails:
            for name in _names_beside(text, m.start(), m.end()):
                yield "PERSON", name
        for m in _PROMPT.finditer(text):
            start = walk_back(text, m.start(), _USER_CHARS, 32)
            user = text[start:m.start()] if start >= 0 else ""
            if _PROMPT_USER.fullmatch(user) and (start == 0 or text[start - 1] not in "+"):
                yield "USER", user
                yield "HOST", m.group("host")
    yield from _named_by_context(text, low)
    if "name" in low:
        for m in _PERSON_CONFIG.finditer(low):
            name = text[m.start("name"):m.end("name")]
            if _person(name, handle_ok=False):
                yield "PERSON", name


def context(text: str, low: str) -> Iterator[Span]:
    """(start, end, USER, name) of user names in paths and ``USER=`` variables."""
    if any(w in low for w in ("users", "home")):  # -Users-alice-proj: a dashed name ends at the first dash
        for m in _HOME.finditer(text):
            group = next(g for g in _USER_GROUPS if m.group(g))
            if group == "dashed" and not _DASHED_BEFORE.search(text, max(0, m.start() - 3), m.start()):
                continue  # a kebab-case word (go-home-screen), not a project folder
            user = m.group(group).rstrip(".-_ ")
            if user and not user.isdigit() and not PLACEHOLDER.fullmatch(user):
                yield m.start(group), m.start(group) + len(user), "USER", user
    if "~" in text:
        for m in _TILDE_USER.finditer(text):
            group = "user" if m.group("user") else "user2"
            yield m.start(group), m.end(group), "USER", m.group(group)
    if any(w in low for w in ("user=", "name=", "login=")):
        for m in _USER_VARIABLE.finditer(text):
            if not starts_word(text, m.start()) and not (
                    text[m.start() - 1] == "_" and text[m.start() - 2:m.start() - 1].isupper()):
                continue  # myUSER=, not USER= / DB_USER=
            user = m.group("user").rstrip(".-_ ")
            if user and not user.isdigit():
                yield m.start("user"), m.start("user") + len(user), "USER", user


def _named_by_context(text: str, low: str) -> Iterator[tuple[str, str]]:
    """Names a signature, a greeting or a trailer gives without an address."""
    for m in at_line_starts(_SIGNED, text, _SIGNED_HIT.finditer(low)):
        if _signed_name(m.group("name"), one_word=m.group("closing") != "--"):
            yield "PERSON", m.group("name")
    for rule, hits in ((_SIGNED_INLINE, _SIGNED_INLINE_HIT), (_GREETING, _GREETING_HIT)):
        for m in at_line_starts(rule, text, hits.finditer(low)):
            if _signed_name(m.group("name"), one_word=True):
                yield "PERSON", m.group("name")
    if "author" in low or "-by" in low or "maintain" in low or "committer" in low or "written by" in low:
        for m in at_line_starts(_TRAILER, text, _TRAILER_HIT.finditer(low)):
            if _full_name(m.group("name")):
                yield "PERSON", m.group("name")
        for key in _AUTHOR_KEY.finditer(low):
            if key.start() and low[key.start() - 1].isalnum():
                continue  # coauthor, mainauthor
            m = _AUTHOR_VALUE.match(text, key.end())
            if m is not None and _full_name(m.group("name")):
                yield "PERSON", m.group("name")


def _signed_name(name: str, one_word: bool) -> bool:
    """A name a signature or a greeting gives: a full name, or (``one_word``) a first
    name; none of its words a word of a reply (``Thanks, Great Work``)."""
    if any(w.lower() in _NOT_FIRST_NAMES for w in name.split()):
        return False
    return _full_name(name) or (one_word and _first_name(name))


def _first_name(name: str) -> bool:
    """One capitalised word that a closing or a greeting gives: ``Anna``, not ``Done``."""
    return name.isalpha() and len(name) >= 3 and name[0].isupper() and name[1:].islower() \
        and _person(name, handle_ok=False) and name.lower() not in _NOT_FIRST_NAMES \
        and name.lower() not in _NOT_NAME_WORDS


def _person(name: str, handle_ok: bool) -> bool:
    """A personal name (every word capitalised), or after ``Author:`` also a login handle."""
    words = name.split()
    if name.lower() in _NON_PERSONS or any(w.lower() in _NON_PERSONS for w in words[:1]):
        return False
    if all(w[0].isupper() and not w.isupper() or len(w) <= 2 and w.endswith(".") for w in words):
        return len(name) >= 3
    return handle_ok and len(words) == 1 and len(name) >= 3


def _full_name(name: str) -> bool:
    """Two to four capitalised words, none a role, a status or a greeting: ``Jane Doe``,
    ``Jan van Dijk`` (not ``Staff Engineer``, ``In Progress``)."""
    words = [w for w in name.split() if w[0].isupper()]
    return 2 <= len(words) <= 4 and _person(name, handle_ok=False) \
        and not any(w.lower().strip(".,") in _NON_PERSONS or w.lower().strip(".,") in _NOT_NAME_WORDS for w in words)


def _names_beside(text: str, start: int, end: int) -> Iterator[str]:
    """Names laid out beside the address at ``text[start:end]``; see the module doc."""
    breaks = list(_LINE_BREAK.finditer(text, max(0, start - 400), start))
    line_start = breaks[-1].end() if breaks else max(0, start - 400)
    nxt = _LINE_BREAK.search(text, end, end + 400)
    line_end = nxt.start() if nxt else min(len(text), end + 400)
    # markdown around a name (**Jane Doe**, [Jane Doe](mailto:...)) reads as spaces
    before = _MARKUP.sub(" ", text[line_start:start][-120:])
    after = _MARKUP.sub(" ", text[end:line_end])
    for cap in _CAPITAL.finditer(before):
        m = _NAME_AT_END.match(before, cap.start())
        if m and _full_name(m.group("name")):
            yield m.group("name")
            break
    m = _NAME_AFTER.match(after)
    if m and _full_name(m.group("name")):
        yield m.group("name")
    line = text[line_start:line_end]
    if line.count("|") >= 2 or "\t" in line or "\\t" in line:  # a table row: every cell
        for cell in re.split(r"\||\t|\\t", line):
            cell = cell.strip().strip("*_`\"'")
            if _NAME.fullmatch(cell) and _full_name(cell):
                yield cell
    if len(_CELL_SPLIT.findall(line)) >= 2:  # a CSV row: first and last name in cells before the address
        cells = [c.strip().strip("\"'") for c in _CELL_SPLIT.split(text[line_start:start])][:-1]
        words = []
        for cell in reversed(cells):
            if not re.fullmatch(_NAME_WORD, cell) or cell.lower() in _NON_PERSONS or cell.lower() in _HEADER_WORDS:
                break
            words.insert(0, cell)
        if 2 <= len(words) <= 3 and _full_name(" ".join(words)):
            yield from words
    # name fields nearby: "name": "Jane Doe", ... / Name: Jane Doe (a few lines around)
    window = text[max(0, start - 200):min(len(text), end + 200)]
    for m in _NAME_FIELD.finditer(window):
        if _full_name(m.group("name")):
            yield m.group("name")
    if len(line) - (end - start) <= 24:  # the address (and a label) alone on its line: a signature?
        yield from _signature(text, line_start)


def _signature(text: str, line_start: int) -> Iterator[str]:
    """The name line of the signature block whose address line starts at ``line_start``."""
    lines = _LINE_BREAK.split(text[max(0, line_start - 600):line_start])
    if lines and not lines[-1]:
        lines.pop()  # the break that ends the line above
    above: list[str] = []  # nearest first, up to a blank line
    for line in reversed(lines[-5:]):
        if not line.strip():
            break
        # "Jane Doe | Acme", "Jane Doe, Staff Engineer": the name is the first part
        above.append(re.split(r"[ \t][|\u2013\u2014-][ \t]|,[ \t]", line.strip())[0].strip(" ,"))
    for i, line in enumerate(above):
        if _CLOSING.match(line):
            if i > 0 and _NAME.fullmatch(above[i - 1]) and _full_name(above[i - 1]):
                yield above[i - 1]
            return
    names = [line for line in above if _NAME.fullmatch(line) and _full_name(line)]
    if names and len(above) <= 4:
        yield names[-1]  # the top line of the block
