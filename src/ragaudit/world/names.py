"""Fictitious names, built from invented syllables: no real company, person or place can
come out, so a question about them can only be answered from the generated documents.

Every generator is a bijection from an index to a name (mixed-radix over syllable
tables), so a million distinct names cost no bookkeeping and the same seed always gives
the same names.
"""

from __future__ import annotations

import random

_ONSETS = [
    "b",
    "br",
    "c",
    "cr",
    "d",
    "dr",
    "f",
    "fl",
    "g",
    "gr",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "pr",
    "qu",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "w",
    "z",
    "th",
    "sh",
    "ch",
    "bl",
    "gl",
    "pl",
    "sl",
    "sn",
    "sp",
]
_NUCLEI = ["a", "e", "i", "o", "u", "ae", "ia", "io", "ou", "ei"]
_CODAS = ["", "n", "r", "l", "s", "th", "m", "x", "nd", "rk", "st", "v"]

_PERSON_ENDS = ["a", "o", "en", "ia", "ar", "el", "in", "ic", "us", "ette", "ov"]
_FAMILY_ENDS = [
    "more",
    "ford",
    "wick",
    "ley",
    "ton",
    "stead",
    "vale",
    "worth",
    "croft",
    "mere",
    "by",
    "holt",
]
_COMPANY_KINDS = [
    "Holdings",
    "Works",
    "Systems",
    "Partners",
    "Group",
    "Labs",
    "Industries",
    "Collective",
    "Ventures",
    "Trading",
]
_PLACE_ENDS = ["ia", "mar", "dor", "heim", "vik", "grad", "port", "mouth", "polis", "shire"]
_PROJECT_KINDS = [
    "Footbridge",
    "Data Centre",
    "Water Works",
    "Terminal",
    "Medical Hub",
    "Tower",
    "Depot",
    "Viaduct",
    "Campus",
    "Marina",
    "Observatory",
    "Library",
    "Tramway",
    "Arena",
    "Clinic",
    "Reservoir",
    "Quay",
    "Plaza",
    "Laboratory",
    "Mill",
]


def _syllables(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct invented syllables, shuffled by ``rng``."""
    pool = sorted({o + n + c for o in _ONSETS for n in _NUCLEI for c in _CODAS})
    rng.shuffle(pool)
    return pool[:count]


def _digits(index: int, radices: list[int]) -> list[int]:
    out = []
    for radix in radices:
        index, digit = divmod(index, radix)
        out.append(digit)
    if index:
        raise ValueError("index out of range for this name space")
    return out


_STRIDE = 1_000_003  # prime, so coprime with every capacity below
_CAPACITY = {
    "person": 600 * len(_PERSON_ENDS) * 900 * len(_FAMILY_ENDS),
    "company": 1200 * len(_COMPANY_KINDS) * 700,
    "place": 700 * len(_PLACE_ENDS) * 7,
    "project": 700 * len(_PROJECT_KINDS) * 1200,
}


# How many distinct given and family names a person's name is made of (a name made of a
# first and a last name column draws one of each per distinct value).
GIVEN_NAMES = 600 * len(_PERSON_ENDS)
FAMILY_NAMES = 900 * len(_FAMILY_ENDS)


class NameSpace:
    """Fictitious names of people, companies, places and projects for one seed."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"names:{seed}")
        self._first = _syllables(rng, 600)
        self._family = _syllables(rng, 900)
        self._brand = _syllables(rng, 1200)
        self._place = _syllables(rng, 700)
        self._offset = rng.randrange(1_000_000)

    def person(self, i: int) -> str:
        """The i-th person: a given name and a family name."""
        d, a, b, c = _digits(i, [len(_FAMILY_ENDS), 600, len(_PERSON_ENDS), 900])
        given = (self._first[a] + _PERSON_ENDS[b]).capitalize()
        family = (self._family[c] + _FAMILY_ENDS[d]).capitalize()
        return f"{given} {family}"

    def company(self, i: int) -> str:
        """The i-th company name."""
        a, b, c = _digits(i, [1200, len(_COMPANY_KINDS), 700])
        return f"{(self._brand[a] + self._place[c][:3]).capitalize()} {_COMPANY_KINDS[b]}"

    def place(self, i: int) -> str:
        """The i-th town, in an invented region."""
        a, b = _digits(i, [700, len(_PLACE_ENDS) * 7])
        town = (self._place[a] + _PLACE_ENDS[b % len(_PLACE_ENDS)]).capitalize()
        region = (self._place[(a + 1 + b) % 700] + "land").capitalize()
        return f"{town}, {region}"

    def project(self, i: int) -> str:
        """The i-th project name."""
        a, b, c = _digits(i, [700, len(_PROJECT_KINDS), 1200])
        return f"{(self._place[a] + self._brand[c][:3]).capitalize()} {_PROJECT_KINDS[b]}"

    def distinct(self, kind: str, n: int) -> list[str]:
        """``n`` distinct names of ``kind`` (person, company, place, project): two syllable
        paths can spell the same word, so repeats are skipped."""
        make = getattr(self, kind)
        capacity = _CAPACITY[kind]
        if n > capacity // 2:
            raise ValueError(f"at most {capacity // 2} distinct {kind} names")
        seen: set[str] = set()
        out: list[str] = []
        i = 0
        while len(out) < n:
            # A stride coprime with the capacity visits the name space in a scattered order,
            # so neighbouring rows do not share syllables.
            name = make((i * _STRIDE + self._offset) % capacity)
            i += 1
            if name not in seen:
                seen.add(name)
                out.append(name)
        return out
