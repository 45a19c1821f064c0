"""The answers pages (``rsp_jobs/ui``) over a store holding one run of a registered query: its
windows' answers are a table per window whose cells are what ``rsp query`` gives for that
result frame; the run's quality check links its Data Docs page, served read only; the lineage
page says what ``rsp provenance`` says; the quarantined line of the input is listed; whatever
the data holds is escaped; and a query the caller may not read is not shown."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

from rsp_jobs.cli import main
from rsp_jobs.store import db
from rsp_jobs.store.lineage import lineage, summary
from rsp_jobs.ui.app import create_app
from tests.support.answers import LABEL, STREAM, answered_home

pytestmark = pytest.mark.gx  # the run's output check is a GX validation, as in a DAG run


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("answered")
        patch.setenv("RSP_HOME", str(home))
        patch.setenv("RSP_STORE_URL", f"sqlite:///{home / 'store.sqlite'}")
        patch.setenv("RSP_QUERIES_DIR", str(home / "queries"))
        yield answered_home(home, home / "queries")


@pytest.fixture
def client(answered, monkeypatch):
    monkeypatch.setenv("RSP_HOME", str(answered.home))
    monkeypatch.setenv("RSP_STORE_URL", answered.store_url)
    monkeypatch.setenv("RSP_QUERIES_DIR", str(answered.queries))
    return TestClient(create_app())


class Tables(HTMLParser):
    """The text of every ``<table class="answers">``: its header, then its rows of cell values
    (a cell's value without the note on its datatype)."""

    def __init__(self):
        super().__init__()
        self.tables, self._cell, self._in_note, self._in_table = [], None, 0, False

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("class", "answers") in attrs:
            self.tables.append([])
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.tables[-1].append([])
        elif self._in_table and tag in ("td", "th"):
            self._cell = ""
        elif tag == "span" and ("class", "note") in attrs:
            self._in_note += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = False
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(self._cell)
            self._cell = None
        elif tag == "span" and self._in_note:
            self._in_note -= 1

    def handle_data(self, data):
        if self._cell is not None and not self._in_note:
            self._cell += data


def answer_tables(html: str) -> list[list[list[str]]]:
    parser = Tables()
    parser.feed(html)
    return parser.tables


def rsp_query(text: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["query", text]) == 0
    return json.loads(capsys.readouterr().out)["results"]["bindings"]


def test_each_window_is_a_table_of_the_answers_rsp_query_gives_for_its_result_frame(client, answered, capsys):
    page = client.get("/")
    assert page.status_code == 200
    tables = answer_tables(page.text)
    assert len(tables) == 2  # the latest window first
    for table, frame in zip(tables, reversed(answered.frames)):
        header, *rows = table
        assert header == ["sensor", "label", "avg", "n"]
        # each solution is a resource of the result frame with one rsp:var/<name> per variable
        answers = rsp_query(
            "SELECT ?sensor ?label ?avg ?n WHERE { GRAPH ?x[*] { ?r <urn:rsp:ns:window> ?w ; "
            "<urn:rsp:ns:var/sensor> ?sensor ; <urn:rsp:ns:var/label> ?label ; <urn:rsp:ns:var/avg> ?avg ; "
            f"<urn:rsp:ns:var/n> ?n . }} FILTER(str(?w) = \"{frame}\") }}", capsys)
        assert sorted(rows) == sorted([[b[v]["value"] for v in header] for b in answers])
        assert rows  # a window with answers
    assert [["urn:ex:s2", LABEL, "20.0", "1"]] == [r for r in tables[1][1:] if r[0] == "urn:ex:s2"]


def test_markup_in_the_data_is_escaped(client):
    page = client.get("/").text
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co" in page


def test_the_run_quality_check_links_its_data_docs_page_served_read_only(client):
    page = client.get("/").text
    assert re.search(r'<span class="ok">passed</span>\s+rsp_output_batch, (\d+) of \1 expectations', page)
    (link,) = {part.split('"')[0] for part in page.split('href="/docs/')[1:]}
    assert link.startswith("validations/rsp_output_batch/avg_temp_2026-01-05T06_00_00_00_00_2026-01-05T06_02_00")
    docs = client.get(f"/docs/{link}")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "rsp_output_batch" in docs.text
    assert client.get("/docs/").status_code == 200  # the site's index
    # nothing outside the site, however the path is written
    for outside in ("../store.sqlite", "..%2fstore.sqlite", "%2e%2e/%2e%2e/store.sqlite",
                    "/etc/passwd", "%2fetc%2fpasswd", "static/../../../store.sqlite", "nothing.html"):
        assert client.get(f"/docs/{outside}").status_code == 404, outside
    assert client.post(f"/docs/{link}").status_code == 405


def test_the_docs_site_refuses_a_link_that_leads_out(client, answered):
    from rsp_jobs.quality.validate import docs_site

    link = docs_site(answered.home) / "leak.txt"
    link.symlink_to(answered.home / "store.sqlite")
    try:
        assert client.get("/docs/leak.txt").status_code == 404
    finally:
        link.unlink()


def test_the_lineage_page_says_what_rsp_provenance_says(client, answered, capsys):
    frame = answered.frames[0]
    links = {unquote(part.split('"')[0]) for part in client.get("/").text.split('href="/lineage?frame=')[1:]}
    assert links == set(answered.frames)
    page = client.get("/lineage", params={"frame": frame})
    assert page.status_code == 200
    capsys.readouterr()
    assert main(["provenance", frame]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed == summary(lineage(db.engine(answered.store_url), frame))
    lines = page.text.split('<pre class="lineage">')[1].split("</pre>")[0].splitlines()
    assert lines == printed
    assert "window_evaluation" in lines[0] and "ingest" in lines[0]
    derived = page.text.split("Derived from")[1]
    assert f"{STREAM}/g/10" in derived and f"{STREAM}/g/40" in derived
    assert f"{STREAM}/g/80" not in derived  # its own window's frames only
    assert client.get("/lineage", params={"frame": f"{STREAM}/g/10"}).status_code == 404  # not a result


def test_the_quarantined_line_of_the_input_is_listed_with_its_text(client, answered):
    page = client.get("/").text
    assert "1 rejected part(s) of http://ex.org/sensors" in page
    part = page.split('href="/quarantine/')[1].split('"')[0]
    shown = client.get(f"/quarantine/{part}")
    assert shown.status_code == 200
    assert "sensors.trig:" in shown.text and "this is not a term" in shown.text
    assert client.get("/quarantine/999999").status_code == 404


def test_a_query_the_user_may_not_read_is_not_shown(answered, monkeypatch):
    monkeypatch.setenv("RSP_STORE_URL", answered.store_url)
    monkeypatch.setenv("RSP_QUERIES_DIR", str(answered.queries))
    monkeypatch.setenv("RSP_HOME", str(answered.home))
    nobody = TestClient(create_app(lambda: (lambda dag_id: False)))
    page = nobody.get("/")
    assert page.status_code == 200 and "avg_temp" not in page.text
    assert nobody.get("/query/avg_temp").status_code == 404
    assert nobody.get("/lineage", params={"frame": answered.frames[0]}).status_code == 404
    assert nobody.get("/docs/index.html").status_code == 403
    assert nobody.get("/quarantine/1").status_code == 404
