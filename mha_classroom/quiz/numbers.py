"""Numbers in quick checks: what a learner types, read as a number, and numbers written for reading.

Shared by the bank (a numeric question's answer in words), grading and both front ends,
so the notebook and the terminal read '2,362,368' and '12.6 million' the same way.
"""

from __future__ import annotations

import math
import re


def format_number(value: float | None) -> str:
    """64 -> '64', 2362368 -> '2,362,368', 27.7128 -> '27.71'."""
    if value is None:
        return ""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.2f}"


_GROUPED = re.compile(r"[0-9]{1,3}(?:(?P<sep>[,_ \u00a0\u202f'])[0-9]{3})(?:(?P=sep)[0-9]{3})*")
_SCALE_WORDS = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "g": 1e9}
_POWER = re.compile(r"^(?P<mantissa>.+?)\s*(?:[x×*·]\s*10\s*(?:\^|\*\*)\s*(?P<exp>[+\-−]?[0-9]{1,3}))$")


def _parse_plain(text: str) -> float | None:
    """'64', '-1.5', '2,362,368', '2 362 368', '3.2e2' -> a float. Digit groups must have three digits."""
    text = text.strip().replace("−", "-")
    sign = ""
    if text[:1] in "+-":
        sign, text = text[0], text[1:].lstrip()
    whole, dot, rest = text.partition(".")
    if _GROUPED.fullmatch(whole):
        whole = re.sub(r"[,_ \u00a0\u202f']", "", whole)
    text = whole + dot + rest
    if not re.fullmatch(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?", text):
        return None
    value = float(sign + text)
    return value if math.isfinite(value) else None


def parse_number(text: str) -> float | None:
    """What a learner types, as a number; None if it is not one.

    Accepts '64', ' 2,362,368 ', '2_362_368', '2 362 368', '3.2e2', '1.26e7',
    '1.26 × 10^7', '12.6 million'. Separators must group three digits, so '3 6' or
    '3,6' is not 36.
    """
    if not isinstance(text, str):
        text = str(text)
    if len(text) > 200:
        return None
    text = text.strip()
    if not text:
        return None
    power = _POWER.match(text)
    if power:
        mantissa = _parse_plain(power["mantissa"])
        if mantissa is None:
            return None
        try:
            value = mantissa * 10.0 ** int(power["exp"].replace("−", "-"))
        except OverflowError:  # 10.0 ** 400 raises rather than giving inf
            return None
        return value if math.isfinite(value) else None
    words = re.fullmatch(r"(.+?)\s*([A-Za-z]+)", text)
    if words and words[2].lower() in _SCALE_WORDS and (words[2].lower() not in ("m", "g") or words[2] in ("M", "G")):
        mantissa = _parse_plain(words[1])
        return None if mantissa is None else mantissa * _SCALE_WORDS[words[2].lower()]
    return _parse_plain(text)
