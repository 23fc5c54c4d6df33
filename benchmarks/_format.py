"""Number formats and the goal-row shape that every section's report functions share."""

from __future__ import annotations


def ms(seconds) -> str:
    """Seconds as '12.34 ms', '1,234 ms' or '56.7 µs'; '-' for None."""
    if seconds is None:
        return "-"
    milli = seconds * 1000
    if milli >= 100:
        return f"{milli:,.0f} ms"
    if milli >= 1:
        return f"{milli:.2f} ms"
    return f"{milli * 1000:.1f} µs"


def x(ratio) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def met(flag) -> str:
    return {True: "met", False: "**missed**", None: "not measured"}[flag]


def goal(text: str, target: str, measured: str, met_flag) -> dict:
    """One row of the goals table (the report adds the section's name)."""
    return {"goal": text, "target": target, "measured": measured, "met": met_flag}
