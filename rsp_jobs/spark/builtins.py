"""SPARQL 1.1 built-in functions on strings, hashes, IRIs and times (W3C SPARQL 1.1 Query
§17.4), as Spark Columns over N-Triples text (``rsp_jobs.spark.terms``).

Every function here is Spark's own SQL functions, no Python per row. A SPARQL error is NULL:
a wrong argument type, an argument pair that is not compatible, an invalid lexical form.
The argument kinds are §17.4.3.1's:

- a *string literal* is a simple literal, an ``xsd:string`` or a literal with a language tag
  (§17.4.3.1.1);
- a *simple literal* is, under RDF 1.1, a literal of datatype ``xsd:string`` (with or without
  that datatype written).

Spark's strings count Unicode code points, not UTF-16 units: ``length``, ``substring`` and
``instr`` treat a character outside the BMP as one character, as XPath's string functions
count characters (code points: the W3C tests substring01-non-bmp, length01-non-bmp).
"""

from __future__ import annotations

import re

from pyspark.sql import Column
from pyspark.sql import functions as F

from rsp_jobs import terms as T
from rsp_jobs.spark import terms as ST


def is_string_literal(t: Column) -> Column:
    """§17.4.3.1.1: a simple literal, an xsd:string or a literal with a language tag."""
    return ST.is_string_literal(t) | ST.has_language(t)


def string_arg(t: Column) -> Column:
    """A string literal's lexical form; NULL (an error) for any other term."""
    return F.when(is_string_literal(t), ST.lexical(t))


def simple_arg(t: Column) -> Column:
    """A simple literal's (or an xsd:string's) lexical form; NULL for any other term."""
    return F.when(ST.is_string_literal(t), ST.lexical(t))


def compatible(a: Column, b: Column) -> Column:
    """§17.4.3.1.2 Argument Compatibility Rules: "The arguments are simple literals or literals
    typed as xsd:string; The arguments are plain literals of identical language tags; The first
    argument is a plain literal with language tag and the second argument is a simple literal
    or literal typed as xsd:string". Tags compare case-insensitively (RDF 1.1 §3.3)."""
    return (
        (ST.is_string_literal(a) & ST.is_string_literal(b))
        | (
            ST.has_language(a)
            & ST.has_language(b)
            & (F.lower(ST.language(a)) == F.lower(ST.language(b)))
        )
        | (ST.has_language(a) & ST.is_string_literal(b))
    )


def same_kind(source: Column, text: Column) -> Column:
    """A literal of "the same kind (simple literal, plain literal same language tag,
    xsd:string)" as ``source`` (§17.4.3.3 and others): its language tag kept."""
    return ST.lang_literal(text, ST.language(source))


# ---------------------------------------------------------------------------- strings


def _round(x: Column) -> Column:
    """XPath fn:round (F&O 3.1 §4.4.4: "rounds to the nearest integer; if there are two such
    numbers, then the one that is closest to positive infinity"), as a double: NaN and the
    infinities stay (Spark's floor() is a bigint, where NaN would become 0)."""
    return F.when(F.isnan(x) | (F.abs(x) == float("inf")), x).otherwise(
        F.floor(x + F.lit(0.5)).cast("double")
    )


def substr(source: Column, start: Column, length: Column | None) -> Column:
    """§17.4.3.3 SUBSTR, as XPath fn:substring (F&O 3.1 §5.4.3): "the characters whose position
    $p satisfies: fn:round($start) <= $p and $p < fn:round($start) + fn:round($length)", with
    positions counted from 1 in characters. Start and length are numbers (F&O's xs:double);
    NaN, or a sum that is NaN (``-INF + INF``), selects no character."""
    text = string_arg(source)
    first = _round(start)
    size = F.length(text).cast("double") + 1  # one past the last position
    begin = F.greatest(first, F.lit(1.0))
    # (Spark orders NaN above every number and its least()/greatest() skip NULLs: both are
    # tested first)
    if length is None:
        count = size - begin
        invalid = F.isnan(first)
        known = start.isNotNull()
    else:
        end = first + _round(length)
        count = F.least(end, size) - begin
        invalid = F.isnan(first) | F.isnan(end)
        known = start.isNotNull() & length.isNotNull()
    chosen = F.when(invalid | (count <= 0), F.lit("")).otherwise(
        text.substr(begin.cast("int"), count.cast("int"))
    )
    return F.when(text.isNotNull() & known, same_kind(source, chosen))


def strbefore(arg1: Column, arg2: Column) -> Column:
    """§17.4.3.8 STRBEFORE: "the function returns a literal of the same kind as the first
    argument arg1 (simple literal, plain literal same language tag, xsd:string). The lexical
    form of the result is the substring of the lexical form of arg1 that precedes the first
    occurrence of the lexical form of arg2. If the lexical form of arg2 is the empty string,
    this is considered to be a match and the lexical form of the result is the empty string.
    If there is no such occurrence, an empty simple literal is returned." Arguments must be
    compatible (§17.4.3.1.2), else an error."""
    a, b = ST.lexical(arg1), ST.lexical(arg2)
    at = F.instr(a, b)  # 1-based, 0: not found; "" is found at 1
    return F.when(
        compatible(arg1, arg2),
        F.when(at > 0, same_kind(arg1, a.substr(F.lit(1), at - 1))).otherwise(F.lit('""')),
    )


def strafter(arg1: Column, arg2: Column) -> Column:
    """§17.4.3.9 STRAFTER: the same as STRBEFORE for "the substring of the lexical form of arg1
    that follows the first occurrence of the lexical form of arg2"; an empty arg2 matches at
    the start, so the result is arg1's whole lexical form."""
    a, b = ST.lexical(arg1), ST.lexical(arg2)
    at = F.instr(a, b)
    after = a.substr(at + F.length(b), F.length(a) + 1)
    return F.when(
        compatible(arg1, arg2),
        F.when(at > 0, same_kind(arg1, after)).otherwise(F.lit('""')),
    )


def contains(arg1: Column, arg2: Column) -> Column:
    """§17.4.3.6 CONTAINS, over compatible arguments (§17.4.3.1.2)."""
    return F.when(compatible(arg1, arg2), ST.lexical(arg1).contains(ST.lexical(arg2)))


def strstarts(arg1: Column, arg2: Column) -> Column:
    return F.when(compatible(arg1, arg2), ST.lexical(arg1).startswith(ST.lexical(arg2)))


def strends(arg1: Column, arg2: Column) -> Column:
    return F.when(compatible(arg1, arg2), ST.lexical(arg1).endswith(ST.lexical(arg2)))


def encode_for_uri(arg: Column) -> Column:
    """§17.4.3.11 ENCODE_FOR_URI, XPath fn:encode-for-uri (F&O 3.1 §6.2): every character but
    the unreserved ones (``A-Z a-z 0-9 - _ . ~``) is written as ``%HH`` per byte of its UTF-8.
    Spark's url_encode is Java's URLEncoder (application/x-www-form-urlencoded): it writes a
    space as ``+``, leaves ``*`` and encodes ``~``; a ``+`` in its output is thus always a
    space (a written ``+`` is ``%2B``)."""
    encoded = F.url_encode(string_arg(arg))
    encoded = F.replace(encoded, F.lit("+"), F.lit("%20"))
    encoded = F.replace(encoded, F.lit("*"), F.lit("%2A"))
    return ST.string_literal(F.replace(encoded, F.lit("%7E"), F.lit("~")))


# fn:replace flags (F&O 3.1 §5.6.2) as Java's: i is Unicode case folding (Java's (?i) alone
# folds ASCII only); q (quote) is applied to the pattern and the replacement, not as a flag
_JAVA_FLAGS = {"i": "iu", "s": "s", "m": "m", "x": "x"}


def java_pattern(pattern: str, flags: str) -> str | None:
    """An XPath regular expression with its flags as a Java one; None where a flag is not
    XPath's (FORX0001, an error)."""
    if any(f not in "ismxq" for f in flags):
        return None
    if "q" in flags:
        pattern = re.escape(pattern)
    inline = "".join(_JAVA_FLAGS[f] for f in dict.fromkeys(flags) if f in _JAVA_FLAGS)
    return (f"(?{inline})" if inline else "") + pattern


def java_replacement(replacement: str, groups: int, quoted: bool) -> str | None:
    """An fn:replace replacement string as Java's Matcher reads one; None where it is invalid
    (FORX0004). F&O 3.1 §5.6.4: "$N ... is replaced by the substring captured by the Nth
    parenthesized sub-expression ... [N is] the longest sequence of digits that is less than or
    equal to the number of capturing subexpressions"; a $N with N above that count (or a
    group that did not take part in the match) is replaced by the empty string; ``\\$`` and
    ``\\\\`` are a literal ``$`` and ``\\``. Under the q flag the replacement is literal."""
    out, i = [], 0

    def literal(c: str) -> str:
        return "\\" + c if c in "\\$" or c.isdigit() else c

    if quoted:
        return "".join(literal(c) for c in replacement)
    while i < len(replacement):
        c = replacement[i]
        if c == "\\":
            if i + 1 >= len(replacement) or replacement[i + 1] not in "\\$":
                return None
            out.append(literal(replacement[i + 1]))
            i += 2
        elif c == "$":
            j = i + 1
            while j < len(replacement) and replacement[j].isdigit():
                j += 1
            if j == i + 1:
                return None
            digits = replacement[i + 1 : j]
            n = 1
            while n < len(digits) and int(digits[: n + 1]) <= groups:
                n += 1
            if int(digits[:n]) <= groups:
                out.append("$" + digits[:n])
            out.extend(literal(d) for d in digits[n:])
            i = j
        else:
            out.append(literal(c))
            i += 1
    return "".join(out)


# ---------------------------------------------------------------------------- constructors


def strdt(lexical: Column, datatype: Column) -> Column:
    """§17.4.2.11 STRDT(simple literal lexicalForm, IRI datatypeIRI): "Constructs a literal with
    lexical form and type as specified by the arguments"; an error where the first argument is
    not a simple literal or the second is not an IRI."""
    text = simple_arg(lexical)
    iri = F.when(ST.is_iri(datatype), datatype)
    return F.when(iri == f"<{T.XSD_STRING}>", ST.string_literal(text)).otherwise(
        F.concat(ST.string_literal(text), F.lit("^^"), iri)
    )


_LANGUAGE_TAG = r"^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*$"  # BCP 47's form, as Turtle's LANGTAG


def strlang(lexical: Column, tag: Column) -> Column:
    """§17.4.2.10 STRLANG(simple literal lexicalForm, simple literal langTag): "Constructs a
    literal with lexical form and language tag as specified by the arguments"; an error where
    either is not a simple literal or the tag is not a language tag. The tag is written in
    lower case, as every tag is (``terms.to_nt``)."""
    text, lang = simple_arg(lexical), simple_arg(tag)
    return F.when(lang.rlike(_LANGUAGE_TAG), ST.lang_literal(text, F.lower(lang)))


_IRI_TEXT = r'^[^<>"{}|^`\\\x00-\x20]*$'  # what an IRIREF may hold (N-Triples)
_SCHEME = r"^[A-Za-z][A-Za-z0-9+.\-]*:"
_DOT_SEGMENT = r"(^|/)\.\.?(/|$)"
# an absolute IRI as its scheme and authority, its path, and its query and fragment
_IRI_PARTS = r"^([A-Za-z][A-Za-z0-9+.\-]*:(//[^/?#]*)?)([^?#]*)(.*)$"
_DOT_PASSES = 4  # ".." segments undone in one path, one inside another at most (else an error)


def _remove_dot_segments(path: Column) -> Column:
    """RFC 3986 §5.2.4 remove_dot_segments on a path, by regular expressions: a ``.`` segment
    goes, a ``..`` segment goes with the segment before it (at the root, alone), a last ``.``
    or ``..`` leaves a ``/``. Each pass undoes one level of ``a/b/../..``; a path still holding
    a dot segment after ``_DOT_PASSES`` is NULL, an error rather than a wrong IRI."""
    path = F.regexp_replace(path, r"/\.\.?$", "$0/")
    for _ in range(_DOT_PASSES):
        path = F.regexp_replace(path, r"/\.(?=/)", "")
        path = F.regexp_replace(path, r"/(?!\.\.(?:/|$))[^/]+/\.\.(?=/)", "")
        path = F.regexp_replace(path, r"^/\.\.(?=/)", "")
    return F.when(~path.rlike(_DOT_SEGMENT), path)


def iri(arg: Column, base: str | None) -> Column:
    """§17.4.2.8 IRI/URI: "The IRI function constructs an IRI by resolving the string argument
    (see RFC 3986 and RFC 3987 ...). The IRI is resolved against the base IRI of the query and
    must result in an absolute IRI"; an IRI argument is returned as it is. An error where the
    argument is another term, the text cannot be an IRI, or a relative one has no base.

    A relative reference is resolved by its first character, with the base's parts computed
    here from the query's BASE (RFC 3986 §5.2.2), and the dot segments of the result's path
    removed (§5.2.4, ``_remove_dot_segments``); an absolute one stays as written, as the
    parser keeps the query's own IRIs. A constant argument is resolved where the query is
    compiled."""
    from rsp_jobs.language.parser import _resolve

    text = simple_arg(arg)
    absolute = text.rlike(_SCHEME)
    if base is None:
        resolved = F.when(absolute, text)
    else:

        def prefix(reference: str) -> Column:
            """What ``reference`` is resolved to, less ``reference`` itself: the part of the
            base that every reference of its shape is appended to."""
            return F.lit(_resolve(base, reference)[: -len(reference)])

        joined = (
            F.when(text.startswith("//"), F.concat(prefix("//x"), text))
            .when(text.startswith("/"), F.concat(prefix("/x"), text))
            .when(text.startswith("?"), F.concat(prefix("?x"), text))
            .when(text.startswith("#"), F.concat(prefix("#x"), text))
            .otherwise(F.concat(prefix("x"), text))
        )
        path = _remove_dot_segments(F.regexp_extract(joined, _IRI_PARTS, 3))
        resolved = (
            F.when(absolute, text)
            .when(text == "", F.lit(_resolve(base, "")))
            .otherwise(
                F.concat(
                    F.regexp_extract(joined, _IRI_PARTS, 1),
                    path,
                    F.regexp_extract(joined, _IRI_PARTS, 4),
                )
            )
        )
    valid = F.when(resolved.rlike(_IRI_TEXT), F.concat(F.lit("<"), resolved, F.lit(">")))
    return F.when(ST.is_iri(arg), arg).otherwise(valid)


def bnode_label(key: Column) -> Column:
    """A blank node named by ``key``: hex digits, a valid label whatever the key holds."""
    return F.concat(F.lit("_:b"), F.sha1(key))


# ---------------------------------------------------------------------------- hashes


def hashed(name: str, arg: Column) -> Column:
    """§17.4.6: "Returns the checksum, as a hex digit string, ... calculated on the UTF-8
    representation of the simple literal or lexical form of the xsd:string"; an error for any
    other term (a language-tagged literal too). Spark hashes a string's UTF-8 bytes."""
    text = simple_arg(arg)
    digest = {
        "md5": F.md5,
        "sha1": F.sha1,
        "sha256": lambda c: F.sha2(c, 256),
        "sha384": lambda c: F.sha2(c, 384),
        "sha512": lambda c: F.sha2(c, 512),
    }[name](text)
    return ST.string_literal(digest)


# ---------------------------------------------------------------------------- times

# An xsd:dateTime's lexical form (XSD 1.1 Part 2 §3.3.7.2): the parts as written
DATETIME_LEXICAL = (
    r"^(-?[0-9]{4,})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2}(\.[0-9]+)?)"
    r"(Z|[+-][0-9]{2}:[0-9]{2})?$"
)


def datetime_part(t: Column, group: int) -> Column:
    """Group ``group`` of ``DATETIME_LEXICAL`` in an xsd:dateTime's lexical form as written (NULL
    for other terms and invalid forms). §17.4.5: YEAR ... SECONDS are XPath's
    fn:year-from-dateTime etc., which read the value in its own time zone: HOURS of
    "2010-12-21T15:38:02-08:00" is 15, not the UTC hour 23."""
    lexical = F.when(ST.datatype(t) == T.XSD_DATETIME, ST.lexical(t))
    valid = lexical.rlike(DATETIME_LEXICAL) & ST.datetime_value(t).isNotNull()
    return F.when(valid, F.regexp_extract(lexical, DATETIME_LEXICAL, group))


def timezone_text(t: Column) -> Column:
    """The time zone as written: "Z", "-08:00", or "" where there is none."""
    return datetime_part(t, 8)


def tz(t: Column) -> Column:
    """§17.4.5.9 TZ: "Returns the timezone part of arg as a simple literal. Returns the empty
    string if there is no timezone"."""
    return ST.string_literal(timezone_text(t))


def timezone(t: Column) -> Column:
    """§17.4.5.8 TIMEZONE: "Returns the timezone part of arg as an xsd:dayTimeDuration. Raises
    an error if there is no timezone." Z and ±00:00 are PT0S (the canonical zero duration)."""
    zone = timezone_text(t)
    hours = F.substring(zone, 2, 2).cast("int")
    minutes = F.substring(zone, 5, 2).cast("int")
    zero = (zone == "Z") | ((hours == 0) & (minutes == 0))
    duration = F.concat(
        F.when(zone.startswith("-"), F.lit("-")).otherwise(F.lit("")),
        F.lit("PT"),
        F.when(hours > 0, F.concat(hours.cast("string"), F.lit("H"))).otherwise(F.lit("")),
        F.when(minutes > 0, F.concat(minutes.cast("string"), F.lit("M"))).otherwise(F.lit("")),
    )
    lexical = F.when(zero, F.lit("PT0S")).otherwise(duration)
    return F.when(
        zone != "",
        F.concat(F.lit('"'), lexical, F.lit(f'"^^<{T.XSD}dayTimeDuration>')),
    )
