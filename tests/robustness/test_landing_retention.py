"""Landing directories do not grow without bound and no file is hashed twice: a loaded (or
already loaded) file leaves for ``loaded/`` or is deleted (``RSP_LANDING_LOADED``), and
``loaded/`` keeps files for ``RSP_LOADED_RETENTION`` (issue 15, "Clean up and tell")."""
from __future__ import annotations

import os
import time

import pytest

from rsp_jobs.errors import InputError
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import ingest_landing
from tests.robustness.test_unreadable_files import STREAM, frame

pytestmark = pytest.mark.gx  # every landing file loaded passes the input gate


def landing():
    folder = registry.stream_config(STREAM).landing_dir
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_a_loaded_file_leaves_for_loaded_and_a_second_delivery_is_skipped_and_leaves_too(home, data_dir):
    folder = landing()
    (folder / "a.nq").write_text(frame("a", 0, 1))
    assert [f.status for f in ingest_landing(STREAM).files] == ["loaded"]
    assert not (folder / "a.nq").exists() and (folder / "loaded" / "a.nq").is_file()
    (folder / "a.nq").write_text(frame("a", 0, 1))  # the same content again
    assert [f.status for f in ingest_landing(STREAM).files] == ["skipped"]
    assert sorted(p.name for p in (folder / "loaded").iterdir()) == ["a.1.nq", "a.nq"]
    assert ingest_landing(STREAM).files == []  # nothing is hashed again


def test_loaded_files_can_be_deleted_instead(home, monkeypatch, data_dir):
    monkeypatch.setenv("RSP_LANDING_LOADED", "delete")
    folder = landing()
    (folder / "a.nq").write_text(frame("a", 0, 1))
    assert [f.status for f in ingest_landing(STREAM).files] == ["loaded"]
    assert list(folder.rglob("*.nq")) == []
    monkeypatch.setenv("RSP_LANDING_LOADED", "archive")
    (folder / "b.nq").write_text(frame("b", 1, 2))
    with pytest.raises(InputError, match="RSP_LANDING_LOADED: move or delete, got 'archive'"):
        ingest_landing(STREAM)


def test_loaded_files_older_than_the_retention_are_deleted(home, monkeypatch):
    folder = landing()
    (folder / "loaded").mkdir()
    old, recent = folder / "loaded" / "old.nq", folder / "loaded" / "recent.nq"
    for path in (old, recent):
        path.write_text("")
    month_ago = time.time() - 31 * 86_400
    os.utime(old, (month_ago, month_ago))
    monkeypatch.setenv("RSP_LOADED_RETENTION", "forever")
    ingest_landing(STREAM)
    assert old.exists()
    monkeypatch.delenv("RSP_LOADED_RETENTION")  # the default: 30 days
    ingest_landing(STREAM)
    assert not old.exists() and recent.exists()
