"""N-Quads lines of plain tokens between single spaces are split on the spaces, other lines
of plain tokens are read in one regular-expression match; every other line goes through
rdflib's tokenizer. The three must read every line alike: the same terms, or the same
rejection. Checked on crafted lines at the edges of the token grammar, on generated lines,
and on the real streams (``data``)."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsp_jobs.ingest import rdf_stream
from rsp_jobs.ingest.rdf_stream import _PLAIN_QUAD, _PLAIN_TOKEN, _QuadLine

XSD = "http://www.w3.org/2001/XMLSchema#"
EDGES = [
    '<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .',
    '<http://ex.org/s> <http://ex.org/p> "12"^^<http://www.w3.org/2001/XMLSchema#int> <http://ex.org/g> .',
    f'<urn:s> <urn:p> "x" "2014-08-01T08:00:00Z"^^<{XSD}dateTime> .',  # C-SPARQL's timestamp context
    '_:b1 <urn:p> _:b.2 _:g .',
    '<urn:s> <urn:p> "chat"@fr-BE .',
    '<urn:s><urn:p>"tight"<urn:g>.',
    '  \t<urn:s>   <urn:p>\t"spaced"   .  # a comment',
    '<urn:s> <urn:p> "" .',
    '<urn:a><urn:a>.',  # an empty literal in the graph position (found by hypothesis)
    '<urn:s> <urn:p> "x" . trailing',
    '"literal" <urn:p> <urn:o> .',  # a literal subject: rejected
    '<urn:s> _:p <urn:o> .',  # a blank predicate: rejected
    '<urn:s> <urn:p> "a\\"b" .',  # escapes: the tokenizer's
    '<urn:s> <urn:p> "caf\\u00e9" .',
    '<urn:s\\u0020x> <urn:p> <urn:o> .',
    '<no-colon> <urn:p> <urn:o> .',
    '<urn:s> <urn:p> "x"@ .',
    '<urn:s> <urn:p> "x"^^<urn:t> <urn:g> <urn:h> .',
    '<urn:s> <urn:p> "x"@en^^<urn:t> .',
    '_:b. <urn:p> <urn:o> .',
    '_:b- <urn:p> <urn:o> .',
    '<urn:s> <urn:p> <urn:o>',
    '<urn:s> <urn:p> <urn:o> ..',
    '<urn:s> <urn:p> <urn:o> "g"@en .',
    '<http://ex.org/é> <urn:p> "ünïcode" .',
    f'<urn:s> <urn:p> "01"^^<{XSD}integer> .',  # the lexical form as written, as the tokenizer keeps it
    f'<urn:s> <urn:p> "1.50E0"^^<{XSD}double> .',
    f'<urn:s> <urn:p> "NaN"^^<{XSD}double> .',
    f'<urn:s> <urn:p> "2014-08-01T10:00:00+02:00"^^<{XSD}dateTime> .',
    '<urn:s> <urn:p> "x"@EN-gb .',
]


def outcome(line: str):
    """What the line gives: its statement (terms, N-Triples text, values), None (blank or
    comment) or the rejection's type."""
    try:
        statement = _QuadLine("salt").quad(line, 7)
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc)
    # a NaN value is unequal to itself: its text is compared
    return statement and replace(statement, values=tuple(map(repr, statement.values)))


NEVER = re.compile(r"(?!)")


def tokenized(line: str):
    """The same, by rdflib's tokenizer alone."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rdf_stream, "_PLAIN_QUAD", NEVER)
        patch.setattr(rdf_stream, "_PLAIN_TOKEN", NEVER)
        return outcome(line)


def matched(line: str):
    """The same, without the split: the one match, else the tokenizer."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rdf_stream, "_PLAIN_TOKEN", NEVER)
        return outcome(line)


@pytest.mark.parametrize("line", EDGES)
def test_an_edge_of_the_grammar_reads_as_the_tokenizer_reads_it(line):
    assert outcome(line) == tokenized(line) == matched(line)


def test_lines_of_single_spaces_are_split_and_others_are_not():
    """The split takes a line whose tokens are whole between single spaces (and must read it
    alone: without the one match it still reads as the tokenizer does); it leaves a line with
    tabs, runs of spaces, a comment, no spaces or a broken token to the paths after it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rdf_stream, "_PLAIN_QUAD", NEVER)
        split = [outcome(line) for line in EDGES]
    assert split == [tokenized(line) for line in EDGES]
    taken = [line for line in EDGES if 4 <= len(line.split(" ")) <= 5 and line.split(" ")[-1] == "."
             and all(_PLAIN_TOKEN.fullmatch(t) for t in line.split(" ")[:-1])]
    assert EDGES[0] in taken and EDGES[1] in taken and EDGES[2] in taken and EDGES[3] in taken
    assert not any(t in taken for t in (EDGES[5], EDGES[6], EDGES[12], EDGES[19]))


def test_plain_lines_take_the_one_match_path_and_escaped_ones_do_not():
    assert _PLAIN_QUAD.match(EDGES[1]) and _PLAIN_QUAD.match(EDGES[2]) and _PLAIN_QUAD.match(EDGES[5])
    assert not any(_PLAIN_QUAD.match(line) for line in EDGES if "\\" in line or line.startswith('"'))
    assert isinstance(outcome(EDGES[1]).o.toPython(), int) and outcome(EDGES[9]) is not None
    assert outcome(EDGES[1]).values == ('12.0', 'None') and outcome(EDGES[1]).nt[2] == f'"12"^^<{XSD}int>'


def test_a_statement_is_a_statement_not_an_error():
    """``outcome`` counts an exception's type as an outcome: the edges must mostly parse."""
    assert sum(not isinstance(outcome(line), type) for line in EDGES) >= 12


TOKEN = st.sampled_from(["<urn:a>", "<http://ex.org/b#c>", "_:n1", "_:n.", '"v"', '"v"@en', '"1"^^<urn:int>',
                         '"a b"', '"q\\"x"', "<bad>", '"', "<urn:a", "_:", ".", "#", "@en", "^^"])


@settings(max_examples=400, deadline=None)
@given(tokens=st.lists(TOKEN, min_size=0, max_size=6), spaces=st.lists(st.sampled_from(["", " ", "\t", "  "]),
                                                                      min_size=7, max_size=7))
def test_any_line_of_tokens_reads_as_the_tokenizer_reads_it(tokens, spaces):
    line = "".join(s + t for s, t in zip(spaces, tokens + ["."])) + spaces[-1]
    assert outcome(line) == tokenized(line) == matched(line)


def test_the_real_streams_read_alike_line_by_line(data_dir, tmp_path):
    from rsp_jobs.ingest import csrbench

    lines = csrbench.write_stream(tmp_path / "csrbench.nq").read_text(encoding="utf-8").splitlines()
    assert len(lines) > 10_000
    assert sum(bool(_PLAIN_QUAD.match(line)) for line in lines) > 0.9 * len(lines)
    assert sum(4 <= len(line.split(" ")) <= 5 for line in lines) > 0.9 * len(lines)  # the split's
    assert [outcome(line) for line in lines] == [tokenized(line) for line in lines]
