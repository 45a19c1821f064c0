"""Data Docs offline: every CDN file the installed GX's page templates name is pinned, fetched
with its integrity checked, and the pages point at local copies; a real validation's Data Docs,
opened in headless Chromium with the network off, show the validation list (and GX's own page,
with its CDN addresses, does not: the control)."""
from __future__ import annotations

import base64
import hashlib
import io
import re
import subprocess
import tarfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import pandas as pd
import pytest

from rsp_jobs.quality import offline_docs
from tests.support.browser import NO_NETWORK, chromium

CDN_TAG = re.compile(r'<(?:script|link)\b[^>]*?(?:src|href)="(https?://[^"]+)"[^>]*>')


def gx_templates() -> dict[str, str]:
    """The installed GX's page templates (read as files: importing GX is not for the fast tier)."""
    files = metadata.files("great_expectations")
    return {f.name: f.read_text() for f in files
            if "render/view/templates" in str(f) and f.name.endswith(".j2")}


def cdn_tags() -> list[str]:
    return [m.group(0) for text in gx_templates().values() for m in CDN_TAG.finditer(text)]


def test_every_cdn_file_of_the_gx_page_templates_is_pinned():
    named = {CDN_TAG.match(tag).group(1) for tag in cdn_tags()}
    assert len(named) >= 10  # jQuery, Bootstrap, bootstrap-table, Font Awesome, Vega, ...
    assert named <= set(offline_docs.local_paths()), "not pinned: " + ", ".join(sorted(named - set(offline_docs.local_paths())))


def test_the_set_up_installed_the_pinned_files():
    assert offline_docs.installed(), f"run `make setup`: the Data Docs assets are not at {offline_docs.assets_dir()}"


def site_like_gx(site: Path) -> list[Path]:
    """An index page and a validation page five folders down, with GX's own CDN tags."""
    head = "\n".join(cdn_tags())
    pages = [site / "index.html", site / "validations" / "suite" / "run" / "20260101T000000.000000Z" / "batch" / "x.html"]
    for page in pages:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"<html><head>{head}</head><body>results</body></html>")
    return pages


def test_pages_point_at_local_copies_that_exist(tmp_path):
    pages = site_like_gx(tmp_path / "site")
    assert offline_docs.localize(tmp_path / "site") == 2
    for page in pages:
        text = page.read_text()
        assert "https://" not in text and "integrity=" not in text and "crossorigin" not in text
        refs = re.findall(r'(?:src|href)="([^"]+)"', text)
        assert len(refs) == len(cdn_tags())
        for ref in refs:
            assert (page.parent / ref).resolve().is_file(), f"{page}: {ref} does not resolve"
    assert offline_docs.localize(tmp_path / "site") == 0  # rewritten pages are left alone


def test_without_the_fetched_files_pages_keep_their_cdn_addresses_and_the_log_says_why(tmp_path, caplog):
    pages = site_like_gx(tmp_path / "site")
    assert offline_docs.localize(tmp_path / "site", root=tmp_path / "nothing") == 0
    assert "https://code.jquery.com/" in pages[0].read_text()
    assert "make setup" in caplog.text and str(tmp_path / "nothing") in caplog.text


def npm_registry(folder: Path, package: dict, content: bytes) -> str:
    """A registry at a file:// address serving ``package``'s tarball with ``content`` in each
    pinned file."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as archive:
        for path in package["files"].values():
            info = tarfile.TarInfo(f"package/{path}")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    name = package["name"]
    tarball = folder / name / "-" / f"{name.split('/')[-1]}-{package['version']}.tgz"
    tarball.parent.mkdir(parents=True)
    tarball.write_bytes(data.getvalue())
    return folder.as_uri()


def test_a_tarball_that_does_not_match_its_pinned_integrity_is_refused(tmp_path, monkeypatch):
    (jquery,) = [p for p in offline_docs.packages() if p["name"] == "jquery"]
    monkeypatch.setattr(offline_docs, "packages", lambda: (jquery,))
    registry = npm_registry(tmp_path / "registry", jquery, b"window.evil = 1;")
    with pytest.raises(RuntimeError, match="jquery-3.7.1.tgz: sha512 is .*, but data_docs_assets.json pins"):
        offline_docs.fetch(tmp_path / "assets", registry=registry)
    assert not (tmp_path / "assets" / "jquery@3.7.1").exists()


def test_fetch_unpacks_the_pinned_files_and_stamps_the_pins(tmp_path, monkeypatch):
    (jquery,) = [p for p in offline_docs.packages() if p["name"] == "jquery"]
    registry = npm_registry(tmp_path / "registry", jquery, b"window.jQuery = 1;")
    tarball = next((tmp_path / "registry").rglob("*.tgz")).read_bytes()
    pinned = {**jquery, "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()}
    monkeypatch.setattr(offline_docs, "packages", lambda: (pinned,))
    root = offline_docs.fetch(tmp_path / "assets", registry=registry)
    assert (root / "jquery@3.7.1" / "dist" / "jquery.min.js").read_bytes() == b"window.jQuery = 1;"
    assert (root / offline_docs.STAMP).read_text().strip() == hashlib.sha256(offline_docs.ASSETS_FILE.read_bytes()).hexdigest()


# ---------------------------------------------------------------- a real site in a real browser

def browse(page: Path, screenshot: Path | None = None) -> str:
    """The DOM of ``page`` after its scripts ran, in headless Chromium with the network off
    (every request goes to a proxy that is not there)."""
    command = [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               NO_NETWORK, "--proxy-bypass-list=<-loopback>",
               "--virtual-time-budget=5000", "--window-size=1280,900"]
    if screenshot is not None:
        subprocess.run([*command, f"--screenshot={screenshot}", page.as_uri()], check=True,
                       capture_output=True, timeout=120)
    done = subprocess.run([*command, "--dump-dom", page.as_uri()], check=True, capture_output=True,
                          text=True, timeout=120)
    return done.stdout


@pytest.fixture
def validated(tmp_path, monkeypatch):
    """``validated(home, assets)``: a real output-suite validation under ``home`` with the
    offline copies at ``assets``; returns the Data Docs index."""
    def run(home: Path, assets: Path) -> Path:
        from rsp_jobs.quality.suites import output_suite, output_view
        from rsp_jobs.quality.validate import run_suite

        monkeypatch.setenv("RSP_HOME", str(home))
        monkeypatch.setenv("RSP_DOCS_ASSETS", str(assets))
        close = datetime(2014, 8, 1, 9, tzinfo=timezone.utc)
        windows = pd.DataFrame({"query_iri": ["urn:rsp:query:q"], "window_open": [close.replace(hour=8)],
                                "window_close": [close], "row_count": [3]})
        first = int(close.timestamp() * 1e6)
        checked, index = run_suite(output_suite("urn:rsp:query:q", None), output_view(windows, first, 300_000_000),
                                   "offline-docs-test")
        assert all(c.success for c in checked)
        return index
    return run


@pytest.mark.gx
@pytest.mark.browser
@pytest.mark.skipif(chromium() is None, reason="Chromium is not installed (make test installs Debian's chromium with apt when run as root)")
def test_the_validation_list_renders_in_a_browser_without_network(validated, tmp_path):
    index = validated(tmp_path / "home", offline_docs.assets_dir())
    dom = browse(index, screenshot=tmp_path / "data-docs.png")
    assert 'class="bootstrap-table' in dom  # built by bootstrap-table's script, on jQuery
    assert "offline-docs-test" in dom
    assert re.findall(r'<img[^>]*src="(static/images/logo-long.png)"', dom)  # not GX's bucket
    pages = list(index.parent.rglob("*.html"))
    assert len(pages) >= 3 and not any("amazonaws.com" in p.read_text() or "https://cdn" in p.read_text() for p in pages)
    assert (tmp_path / "data-docs.png").stat().st_size > 10_000
    # the control: GX's own page, its scripts on CDNs, has no table built
    control = validated(tmp_path / "control", tmp_path / "no-assets")
    assert "https://code.jquery.com/" in control.read_text()
    assert 'class="bootstrap-table' not in browse(control)
