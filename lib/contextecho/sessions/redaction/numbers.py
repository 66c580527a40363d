"""Numbers that identify a person or an account: phones, cards, IBANs, SSNs, coin addresses.

``find(text, low)`` yields ``(class, value)``; ``aliases(cls, value)`` the other ways the
same number is written (searched for too, with the same placeholder).

=======  ====================================================================================
class    found by
=======  ====================================================================================
PHONE    libphonenumber (``phonenumbers``): a run of digit groups (``020 7946 0958``,
         ``06 12 34 56 78``, ``1 415 555 0132``, ``(415) 555-0132``, ``+44 (0)20 ...``) that
         its ``PhoneNumberMatcher`` accepts at ``Leniency.VALID`` for one of a set of regions
         (written with a trunk ``0`` or a ``+``; otherwise for the US or Canada), or, written
         with a trunk ``0`` or a ``+``, a number it deems possible; an ungrouped
         run only after ``phone:`` / ``tel`` / ``mobile`` ... Not phones: runs glued to a
         word, a version or a path (``v1.2.3``, ``L123``, ``:8080``), dates and times,
         IPv4 addresses, dotted runs that are not 2-2-2-2-2 or 3-3-4, table rows of numbers
         that no region's plan allows, plain digit runs (timestamps, ids)
CARD     13-19 digits, grouped 4-4-4-4 / 4-6-5 or not, of a known issuer range, passing
         the Luhn check (``python-stdnum``)
IBAN     ``python-stdnum``'s IBAN validation (mod-97, the country's BBAN structure), in
         any case, compact or grouped by spaces or dashes
SSN      US social security numbers ``123-45-6789`` whose area, group and serial are
         assignable (``python-stdnum``, its list of published examples included); after
         ``ssn`` / ``social security`` also ``123 45 6789``, ``123.45.6789`` and 9 bare digits
CRYPTO   Bitcoin (base58check-valid, bech32) and Ethereum addresses
=======  ====================================================================================
"""
from __future__ import annotations

import hashlib
import re
from typing import Iterator

import phonenumbers
from phonenumbers import Leniency, PhoneNumberMatcher
from stdnum import iban as stdnum_iban
from stdnum import luhn
from stdnum.exceptions import InvalidComponent, ValidationError
from stdnum.us import ssn as stdnum_ssn

from .text import walk_back

# Regions whose national formats are recognised: a number written with a trunk 0 that is
# valid in one of them is a phone; without one, only North American numbers are (a run of
# digit groups is too often valid somewhere: "12 34 56 78 90" is an Indian number).
PHONE_REGIONS = ("GB", "FR", "DE", "IE", "ES", "IT", "NL", "BE", "CH", "AT", "AU", "IN", "US", "CA")
_NANP_REGIONS = ("US", "CA")
_PHONE_FALLBACK_REGIONS = ("GB", "FR", "DE")  # trunk-0 numbers of unallocated (fictional) ranges
# digit groups joined by one separator; a leading + or 00, an optional (0) or (area)
_PHONE_RUN = re.compile(
    r"(?<![\w+.:/#=$%@&\\-])(?:\+|(?<!\d)00(?=\d))?(?:\(0\)[ .-]?)?\(?\d{1,5}\)?"
    r"(?:(?:[ .-]|\)[ ]?|[ ]-[ ])(?:\(0\)[ .-]?)?\(?\d{1,8}\)?){0,6}(?![\w]|[.-]\d|:\d|/\d|,\d{3}\b)")
_PHONE_CONTEXT = re.compile(r"(?:phone|tel|mobile|cell|fax|whatsapp|sms|call me|ring me|handy|portable|telefon"
                            r"|t[ée]l[ée]phone)[\w.-]*[\"']?\s*[:=]?\s*[\"']?(?P<number>\+?\d[\d ().-]{5,18}\d)")  # lowered
_PHONE_WORDS = ("phone", "tel", "mobile", "cell", "fax", "whatsapp", "sms", "call me", "ring me", "handy", "portable")
_DATE = re.compile(r"(?:19|20)\d{2}[-/. ](?:0?[1-9]|1[0-2])[-/. ](?:0?[1-9]|[12]\d|3[01])"
                   r"|(?:0?[1-9]|[12]\d|3[01])[-/. ](?:0?[1-9]|1[0-2])[-/. ](?:19|20)\d{2}")
_CARD_HINT = re.compile(r"\d{4}[ -]?\d{4}")
_CARD_CHARS = frozenset("0123456789 -")
_CARD = re.compile(r"(?<![\d.-])\d[\d -]{11,22}\d(?![\d-]|\.\d)")
_CARD_PREFIX = re.compile(r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|35|6(?:011|5|4[4-9]|2)"
                          r"|50(?:18|20|38)|6(?:304|759|76[1-3])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}(?:[ -]?[A-Za-z0-9]{1,3})?"
                   r"(?![A-Za-z0-9])")
_SSN = re.compile(r"\d(?<![\w.-].)\d{2}-\d{2}-\d{4}(?![\w-]|\.\d)")  # (the lookbehind after the digit it guards)
_SSN_CONTEXT = re.compile(r"(?:ssn|social[ _-]?security(?:[ _-]?(?:number|no))?)[\"']?\s*[:=#]?\s*[\"']?"
                          r"(?P<number>\d{9}|\d{3}[- .]\d{2}[- .]\d{4})(?!\d)")  # lowered
_BTC = re.compile(r"(?<![A-Za-z0-9])(?:[13][1-9A-HJ-NP-Za-km-z]{25,34}|bc1[ac-hj-np-z02-9]{11,71})(?![A-Za-z0-9])")
_ETH = re.compile(r"(?<![A-Za-z0-9])0x[a-fA-F0-9]{40}(?![A-Za-z0-9])")
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def find(text: str, low: str) -> Iterator[tuple[str, str]]:
    """(class, value) of every number of ``text`` that identifies someone; see the module doc."""
    yield from _cards(text)
    if "-" in text or " " in text or "ssn" in low or "security" in low:
        for m in _SSN.finditer(text):
            if _ssn(m.group(0)):
                yield "SSN", m.group(0)
        if "ssn" in low or "security" in low:
            for m in _SSN_CONTEXT.finditer(low):
                if _ssn(m.group("number")):
                    yield "SSN", text[m.start("number"):m.end("number")]
    for m in _IBAN.finditer(text):
        value = _iban(m.group(0))
        if value:
            yield "IBAN", value
    for m in _BTC.finditer(text):
        if _bitcoin(m.group(0)):
            yield "CRYPTO", m.group(0)
    if "0x" in low:
        for m in _ETH.finditer(text):
            yield "CRYPTO", m.group(0)
    yield from _phones(text, low)


def aliases(cls: str, value: str) -> list[str]:
    """Other spellings of the same number: an IBAN or a card compact and grouped, in both cases."""
    if cls == "IBAN":
        compact = stdnum_iban.compact(value)
        grouped = stdnum_iban.format(compact)
        return [f for f in {compact, grouped, compact.lower(), grouped.lower()} if f != value]
    if cls == "CARD":
        digits = re.sub(r"\D", "", value)
        fours = " ".join(digits[i:i + 4] for i in range(0, len(digits), 4))
        return [f for f in {digits, fours, fours.replace(" ", "-")} if f != value]
    return []


# ----------------------------------------------------------------- phones
def _phones(text: str, low: str) -> Iterator[tuple[str, str]]:
    for m in _PHONE_RUN.finditer(text):
        candidate = m.group(0).rstrip(".-) ")
        if candidate.count("(") != candidate.count(")") and candidate.startswith("("):
            candidate = candidate[1:]
        while sum(ch.isdigit() for ch in candidate) >= 8:
            if _phone(candidate):
                yield "PHONE", candidate
                break
            # a number followed by another group ("020 7946 0958 12"): try without the last
            shorter = re.sub(r"(?:[ .-]|\)[ ]?|[ ]-[ ])\(?\d+\)?$", "", candidate)
            if shorter == candidate:
                break
            candidate = shorter
    if any(w in low for w in _PHONE_WORDS):
        for m in _PHONE_CONTEXT.finditer(low):
            number = m.group("number")
            if 7 <= sum(ch.isdigit() for ch in number) <= 15 and not _DATE.search(number):
                yield "PHONE", text[m.start("number"):m.end("number")]


def _phone(candidate: str) -> bool:
    digits = sum(ch.isdigit() for ch in candidate)
    international = candidate.startswith(("+", "00"))
    groups = re.findall(r"\d+", candidate)
    if international:
        if not 8 <= digits <= 15 or len(groups) < 2 and not candidate.startswith("+"):
            return False
    elif not 9 <= digits <= 13 or len(groups) < 2:
        return False  # ungrouped national runs are ids and timestamps (context rule aside)
    if _DATE.search(candidate):
        return False
    separators = set(re.sub(r"[\d()+]", "", candidate))
    if "." in separators and separators != {"."}:
        return False  # decimals in a table row: 0.387817 83.965
    if separators == {"."}:
        shape = [len(g) for g in groups]
        if shape not in ([2, 2, 2, 2, 2], [3, 3, 4], [1, 3, 3, 4]):
            return False  # versions, IPv4 addresses, dotted numbers
    if not international and min(len(g) for g in groups[1:]) < 2:
        return False  # "10 20 3 4 ..." table rows
    trunk = candidate.lstrip("(").startswith("0")
    for region in PHONE_REGIONS if trunk or international else _NANP_REGIONS:
        for match in PhoneNumberMatcher(candidate, region, leniency=Leniency.VALID):
            if sum(ch.isdigit() for ch in match.raw_string) >= digits - 1:
                return True
    if international:
        try:
            return phonenumbers.is_possible_number(phonenumbers.parse(
                "+" + candidate[2:] if candidate.startswith("00") else candidate, None))
        except phonenumbers.NumberParseException:
            return False
    if trunk and all(len(g) >= 2 for g in groups):
        for region in _PHONE_FALLBACK_REGIONS:
            for match in PhoneNumberMatcher(candidate, region, leniency=Leniency.POSSIBLE):
                if sum(ch.isdigit() for ch in match.raw_string) == digits:
                    return True
    return False


# ----------------------------------------------------------------- cards, IBAN, SSN
def _cards(text: str) -> Iterator[tuple[str, str]]:
    end = -1
    for hint in _CARD_HINT.finditer(text):  # every card number holds 8 digits in two fours
        if hint.start() < end:
            continue
        start = walk_back(text, hint.start(), _CARD_CHARS, 24)
        start = max(start, hint.start() - 24)
        end = hint.end()
        while end < len(text) and end - hint.end() < 24 and text[end] in _CARD_CHARS:
            end += 1
        for m in _CARD.finditer(text, start, end):
            if _card(m.group(0)):
                yield "CARD", m.group(0)


def _card(candidate: str) -> bool:
    groups = re.split(r"[ -]", candidate)
    if len(groups) > 1 and min(len(g) for g in groups) < 3:
        return False  # cards are grouped 4-4-4-4 or 4-6-5; "1 2 3 ..." is a table row
    digits = "".join(groups)
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits) or len(set(digits)) < 2:
        return False
    return luhn.is_valid(digits)


def _iban(candidate: str) -> str | None:
    """The longest valid IBAN at the start of ``candidate`` (a greedy match may take a
    following group of digits), or None."""
    while len(re.sub(r"[ -]", "", candidate)) >= 15:
        if stdnum_iban.is_valid(candidate.replace("-", " ")):
            return candidate
        candidate = re.sub(r"[ -]?[A-Za-z0-9]$", "", candidate)
    return None


def _ssn(candidate: str) -> bool:
    candidate = re.sub(r"[ .]", "-", candidate)  # stdnum reads 123-45-6789 or 123456789
    try:
        stdnum_ssn.validate(candidate)
    except InvalidComponent:
        # the published examples (078-05-1120 ...) are refused by stdnum but are SSNs in shape
        digits = re.sub(r"\D", "", candidate)
        area, group, serial = digits[:3], digits[3:5], digits[5:]
        return not (area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000")
    except ValidationError:
        return False
    return True


def _bitcoin(candidate: str) -> bool:
    if candidate.startswith("bc1"):
        return True  # bech32 alphabet, fixed prefix, lower case: specific enough
    n = 0
    for ch in candidate:
        n = n * 58 + _B58.index(ch)
    raw = n.to_bytes(25, "big") if n < 1 << 200 else b""
    return len(raw) == 25 and hashlib.sha256(hashlib.sha256(raw[:21]).digest()).digest()[:4] == raw[21:]
