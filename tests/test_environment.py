"""The installed environment is the locked one, and the engine imports cleanly."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def locked_version(package: str) -> str:
    match = re.search(rf"^{re.escape(package)}==(\S+)$", (ROOT / "requirements.lock").read_text(), re.MULTILINE)
    assert match, f"{package} is not pinned in requirements.lock"
    return match.group(1)


def test_pyspark_and_pyspark_client_are_the_same_pinned_release():
    """Both distributions ship the `pyspark` package; whichever was installed last wins, so
    they must be the very same release for `pyspark.__version__` to be the pinned one."""
    import pyspark

    assert locked_version("pyspark") == locked_version("pyspark-client")
    assert pyspark.__version__ == locked_version("pyspark")


@pytest.mark.slow  # a fresh interpreter importing pyspark, Airflow and GX: 20 s
def test_importing_the_engine_prints_no_warnings():
    code = ("import warnings; warnings.simplefilter('default');"
            "import rsp_jobs.engine, rsp_jobs.cli, pyspark.sql, great_expectations;"
            "from pyspark.sql.pandas.utils import require_minimum_pandas_version as pandas_ok, "
            "require_minimum_pyarrow_version as arrow_ok; pandas_ok(); arrow_ok()")
    result = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr


def test_the_rsp_console_script_is_installed():
    rsp = Path(sys.executable).with_name("rsp")
    result = subprocess.run([str(rsp), "evaluate", "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert "--stream" in result.stdout
