"""Postal addresses: street lines and postcodes.

``find(text, low)`` yields ``("ADDRESS", value)``:

- full US, Canadian and British addresses by ``pyap`` (a street line, a city, a state or
  province and a postcode: ``742 Evergreen Terrace, Springfield, IL 62704``,
  ``221B Baker Street, London NW1 6XE``); pyap is run on a window before each postcode it
  could end with (a US state and ZIP, a Canadian or a British postcode), not on whole
  transcripts (its pattern is slow on megabytes); an address over several lines is
  redacted line by line;
- street lines without a postcode: a house number, one to four capitalised words and a
  street type (``4 Privet Drive``, ``123 Main St``, ``Flat 3, 14 Elm Road``); French
  ``12 rue de la Paix`` / ``5 bis avenue Foch``; German ``Hauptstraße 5``; each with a
  following ``, 75002 Paris`` / ``, 10115 Berlin`` postcode and city;
- British postcodes on their own (``SW1A 2AA``: outward and inward parts, upper case).
"""
from __future__ import annotations

import re
from typing import Iterator

import pyap

_US_STATES = ("AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM"
              "|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|PR")
# (each starts with the characters it needs and checks what stands before them after: a
# pattern that starts with \b or a lookbehind is tried at every position of a text)
_POSTCODES = {
    "US": re.compile(rf"(?:{_US_STATES})(?<!\w..)\.?,?[ \t]+\d{{5}}(?:-\d{{4}})?\b"),
    "CA": re.compile(r"[ABCEGHJ-NPRSTVXY](?<!\w.)\d[ABCEGHJ-NPRSTV-Z][ \t]?\d[ABCEGHJ-NPRSTV-Z]\d\b"),
    "GB": re.compile(r"(?:[A-Z](?<!\w.)[A-Z]?\d[A-Z\d]?|G(?<!\w.)IR)[ \t]\d[ABD-HJLNP-UW-Z]{2}\b"),
}
_STREET_TYPES = (r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Terrace|Way"
                 r"|Parkway|Pkwy|Highway|Hwy|Square|Sq|Circle|Cir|Crescent|Close|Gardens|Grove|Mews|Row|Walk"
                 r"|Hill|Alley|Plaza|Trail|Crossing")
_STREET = re.compile(
    r"(?<![\w.:/-])(?:(?:Flat|Apt|Apartment|Suite|Unit)\.?[ \t]+\w{1,5},?[ \t]+)?\d{1,5}[A-Za-z]?[ \t]+"
    rf"(?:[NSEW]\.?[ \t]+)?(?:[A-Z][a-z'\u2019-]+[ \t]+){{1,4}}(?:{_STREET_TYPES})\b\.?"
    r"(?:,?[ \t]+(?:Apt|Suite|Unit|Flat)\.?[ \t]+\w{1,5})?"
    r"(?:,[ \t]*[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+){0,2})?")
_RUE = re.compile(
    r"(?<![\w.:/-])\d{1,4}(?:[ \t]?(?:bis|ter))?,?[ \t]+(?i:rue|avenue|av\.|boulevard|bd|place|chemin|all[ée]e"
    r"|impasse|quai|route|cours|square)[ \t]+(?:(?:de[ \t]+la|de[ \t]+l'|du|des|de|d')[ \t]*)?"
    r"[A-ZÉÈ][\w'\u2019-]*(?:[ \t]+[A-ZÉÈa-z][\w'\u2019-]*){0,3}?"
    r"(?:,[ \t]*\d{5}[ \t]+[A-ZÉ][\w'\u2019-]+(?:[ -][A-ZÉ][\w'\u2019-]+)*)?(?=[\s,.;)\"']|$)")
_STRASSE = re.compile(
    r"(?<![\w.:/-])[A-ZÄÖÜ][a-zäöüß]+(?:-[A-ZÄÖÜ][a-zäöüß]+)*(?:straße|strasse|str\.|weg|allee|platz|gasse|ring|damm)"
    r"[ \t]+\d{1,4}[a-z]?\b(?:,[ \t]*\d{5}[ \t]+[A-ZÄÖÜ][a-zäöüß]+(?:[ -][A-ZÄÖÜ][a-zäöüß]+)*)?")
_WINDOW = 160  # characters before a postcode that its address can start at
# words each street pattern needs (lowered text): most texts hold none, and skip it
_STREET_GATES = ((_STREET, re.compile(r"\b(?:" + _STREET_TYPES.lower() + r")\b")),
                 (_RUE, re.compile(r"\b(?:rue|avenue|av\.|boulevard|bd|place|chemin|all[ée]e|impasse|quai|route"
                                   r"|cours|square)\b")),
                 (_STRASSE, re.compile(r"(?:straße|strasse|str\.|weg|allee|platz|gasse|ring|damm)[ \t]+\d")))
_DIGIT = re.compile(r"\d")


def find(text: str, low: str) -> Iterator[tuple[str, str]]:
    """("ADDRESS", value) of every postal address of ``text``; see the module doc."""
    for country, rx in _POSTCODES.items():
        for m in rx.finditer(text):
            window = text[max(0, m.start() - _WINDOW):m.end()]
            for address in pyap.parse(window, country=country):
                if address.full_address in window:
                    yield "ADDRESS", address.full_address
                else:  # pyap joins an address's lines with ", ": each line as written
                    for part in address.full_address.split(", "):
                        if len(part) >= 5 and part in window:
                            yield "ADDRESS", part
            if country == "GB":
                yield "ADDRESS", m.group(0)
    if _DIGIT.search(text):
        for rx, gate in _STREET_GATES:
            if gate.search(low):
                for m in rx.finditer(text):
                    yield "ADDRESS", m.group(0).rstrip(" ,.")
