"""Times and durations, converted in one place so that every layer reads and writes them alike.

A moment is µs since the epoch (an int) in the engine, the lake and Spark; an aware UTC
``datetime`` in the store, Airflow and alerts; ISO 8601 / xsd:dateTime text in files, results
and settings. Text without an offset is UTC, as the store reads data literals. Durations (query
windows, ``streams.toml``, settings) are C-SPARQL (``10m``) or ISO 8601 (``PT10M``) text, kept
as ms. Conversions are integer arithmetic: a float ``timestamp()`` loses microseconds.

A leaf: imports nothing else of the package (``tests/test_layers.py``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
US_PER_MS = 1_000
US_PER_S = 1_000_000
MS_PER_DAY = 86_400_000

# ------------------------------------------------------------------------------ moments


def to_us(moment: datetime) -> int:
    """µs since the epoch of an aware datetime."""
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * US_PER_S + delta.microseconds


def from_us(us: int) -> datetime:
    """The aware UTC datetime of µs since the epoch."""
    return datetime.fromtimestamp(us // US_PER_S, tz=UTC).replace(microsecond=us % US_PER_S)


def ms_to_us(ms: int) -> int:
    return ms * US_PER_MS


def us_to_ms(us: int) -> int:
    """Whole ms, rounded down (a window close at 1.5 ms is at 1 ms)."""
    return us // US_PER_MS


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive one is taken to be UTC already."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_datetime(text: str) -> datetime:
    """An ISO 8601 date-time (``Z`` or an offset) as an aware UTC datetime; naive text is UTC.
    ValueError when ``text`` is not one."""
    return as_utc(_aware(text))


def parse_us(text: str) -> int:
    """An ISO 8601 date-time as µs since the epoch (naive text is UTC); ValueError if it is not one."""
    return to_us(_aware(text))  # not via UTC: 0001-01-01T00:00+01:00 has no UTC datetime


def _aware(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def iso_ms(micros: int) -> str:
    """µs since the epoch to the millisecond, in the one form every time is written in: frame
    IRIs, results, messages (``datetime_lexical``: the shortest xsd:dateTime form, XSD's
    canonical one, so ``07:30:00Z`` and ``07:30:00.25Z``). A time pasted from any output then
    names the frame it came from."""
    return datetime_lexical(from_us(micros // US_PER_MS * US_PER_MS))


def datetime_lexical(value: datetime) -> str:
    """The shortest xsd:dateTime lexical form of a time, in UTC with ``Z`` (naive means UTC):
    microseconds only when there are any, without trailing zeros. Frame IRIs are made of it, so
    one moment always gives the same IRI."""
    value = as_utc(value)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def xsd_datetime(ts: datetime) -> str:
    """The xsd:dateTime of a stored time as exports write it: UTC, ``Z``, every microsecond kept."""
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


# ------------------------------------------------------------------------------ durations

# RANGE, STEP, WITHIN, retention...: a century at most, so that a moment plus a duration stays
# in Python's datetime range (docs/operations/limits.md)
MAX_DURATION_MS = 100 * 366 * MS_PER_DAY
UNIT_MS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": MS_PER_DAY}

_CSPARQL_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)", re.IGNORECASE)
_NUM = r"(\d+(?:\.\d+)?)"
_ISO_DURATION = re.compile(
    rf"P(?:{_NUM}W)?(?:{_NUM}D)?(?:T(?:{_NUM}H)?(?:{_NUM}M)?(?:{_NUM}S)?)?", re.IGNORECASE
)
_ISO_UNIT_MS = (7 * MS_PER_DAY, MS_PER_DAY, 3_600_000, 60_000, 1000)


def parse_duration(text: str) -> int:
    """Milliseconds in a C-SPARQL duration (``3000ms``, ``1s``, ``10m``, ``1h``, ``1d``) or an
    ISO 8601 one (``PT3S``, ``PT0.5S``, ``PT10M``, ``P1D``). ISO years and months are refused
    (they have no fixed length), and so is anything that is not a whole number of milliseconds:
    both raise ValueError."""
    match = _CSPARQL_DURATION.fullmatch(text)
    if match:
        unit = match[2].lower()
        return _within_limit(int(match[1]) * UNIT_MS["min" if unit == "m" else unit], text)
    match = _ISO_DURATION.fullmatch(text)
    if not match or not any(match.groups()) or text.upper().endswith("T"):
        raise ValueError(f"not a duration: {text!r} (use e.g. 3000ms, 1s, 10m, 1h, PT3S, PT0.5S)")
    ms = sum(
        (Decimal(value) * unit for value, unit in zip(match.groups(), _ISO_UNIT_MS) if value),
        Decimal(0),
    )
    if ms != ms.to_integral_value():
        raise ValueError(f"duration {text!r} is not a whole number of milliseconds")
    return _within_limit(int(ms), text)


def duration_text(ms: int) -> str:
    """``ms`` as C-SPARQL writes a duration, in the largest unit that divides it: the inverse of
    ``parse_duration`` for its short forms.

    >>> duration_text(3_600_000), duration_text(300_000), duration_text(1500), duration_text(0)
    ('1h', '5m', '1500ms', '0ms')
    """
    for unit, size in (("d", MS_PER_DAY), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def parse_timedelta(text: str) -> timedelta:
    """``parse_duration`` as a timedelta, for settings compared with datetimes."""
    return timedelta(milliseconds=parse_duration(text))


def _within_limit(ms: int, text: str) -> int:
    if ms > MAX_DURATION_MS:
        raise ValueError(f"duration {text!r} is longer than the limit of 100 years")
    return ms


_CALENDAR = re.compile(r"P(?:(\d+)Y)?(?:(\d+)M)?(.*)", re.IGNORECASE)


def parse_calendar_duration(text: str) -> tuple[int, int]:
    """An xsd:duration with years and months too, as (months, milliseconds): months have no
    fixed length, so what they mean depends on the time they are added to (XSD 1.1 appendix
    E). ``P1Y2M3D`` is (14, 259200000). Raises ValueError as ``parse_duration`` does."""
    match = _CALENDAR.fullmatch(text)
    if not match or not (match[1] or match[2]):
        return 0, parse_duration(text)
    months = int(match[1] or 0) * 12 + int(match[2] or 0)
    rest = match[3]
    return months, (parse_duration("P" + rest) if rest else 0)


def duration_upper_bound_ms(text: str) -> int:
    """The longest an xsd:duration can last: a year 366 days, a month 31."""
    months, ms = parse_calendar_duration(text)
    years, months = divmod(months, 12)
    return ms + (years * 366 + months * 31) * MS_PER_DAY
