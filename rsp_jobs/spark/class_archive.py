"""A class-data-sharing archive of the classes a Spark driver loads, so that a JVM starts from
it rather than from Spark's jars.

Every ``rsp`` call, Airflow task and test worker that evaluates in-process starts its own JVM,
and before its first result that JVM loads and verifies some seventeen thousand classes from the
jars: on two cores a session and its first small job took 7.5 s and 8 s of CPU. From a dynamic
CDS archive (JDK 13+, ``-XX:ArchiveClassesAtExit`` / ``-XX:SharedArchiveFile``) they are mapped
in already parsed and verified: 3.6 s and 3 s of CPU.

``python -m rsp_jobs.write_class_archive`` (run by ``scripts/bootstrap.sh``) writes the archive
once, beside the virtual environment that holds Spark's jars, from a driver that runs what the
engine runs; ``java_options`` then names it for every driver JVM. The archive holds only classes
from the class path it was made with; a JVM on another class path (a cluster's executors, which
are not given it) or another JDK prints a warning and loads from the jars as before.
``RSP_CLASS_ARCHIVE=off`` leaves it out.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

OFF = ("0", "off", "false", "no")


def archive_path() -> Path:
    """Where the archive lives: beside the interpreter's packages, one per Spark version (a new
    lock that changes Spark makes a new virtual environment, and with it a new archive)."""
    import pyspark

    return Path(sys.prefix) / "share" / "rsp" / f"spark-{pyspark.__version__}-classes.jsa"


def java_options() -> str:
    """``-XX:SharedArchiveFile=...`` when the archive exists (and is not switched off), else ''."""
    if os.environ.get("RSP_CLASS_ARCHIVE", "").lower() in OFF:
        return ""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path}" if path.is_file() else ""
