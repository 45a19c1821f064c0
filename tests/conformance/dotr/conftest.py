"""Each rule here is evaluated once, over a handful of instants, as one plan of many small joins
(a negation or an aggregate adds a join and a group per candidate): compiling whole-stage code
for it costs more than it saves. Measured on the aggregate rule of ``cases/operators.toml`` (two
cores shared with other work): 30 s with code generation, 21 s without.
``tests/traffic/test_congestion_rules.py`` turns it off likewise."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module", autouse=True)
def interpreted(spark):
    before = spark.conf.get("spark.sql.codegen.wholeStage")
    spark.conf.set("spark.sql.codegen.wholeStage", "false")
    yield
    spark.conf.set("spark.sql.codegen.wholeStage", before)
