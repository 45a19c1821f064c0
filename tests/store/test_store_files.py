"""The store and the project home the ``rsp`` CLI creates are readable by their owner only: the
store holds every frame and result, and the home the lake and the deployment's secrets."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_cli_creates_its_home_and_store_readable_by_their_owner_only(tmp_path):
    home = tmp_path / "new" / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("RSP_HOME", "RSP_STORE_URL")}
    env["RSP_HOME"] = str(home)
    done = subprocess.run([str(Path(sys.executable).with_name("rsp")), "store", "upgrade"], env=env,
                          capture_output=True, text=True, timeout=300, umask=0o022)  # a usual umask
    assert done.returncode == 0, done.stderr[-2000:]
    store = sorted(home.glob("store.sqlite*"))
    assert home / "store.sqlite" in store and (home / "store.sqlite").stat().st_size > 0  # the schema is in it
    assert mode(home) == 0o700
    assert {path.name: oct(mode(path)) for path in store} == {path.name: "0o600" for path in store}
