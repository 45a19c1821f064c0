"""A long evaluation shows it is moving: while Spark jobs run, the ``rsp.spark`` logger says
every few seconds how many tasks of each active stage are done; nothing once they are over."""
from __future__ import annotations

import logging
import re
import time

from rsp_jobs.spark.progress import reported


def test_the_progress_of_running_stages_is_logged_until_the_block_ends(spark, caplog):
    caplog.set_level(logging.INFO, logger="rsp")
    with reported(spark, "slow_query", every_s=0.2):
        # four tasks of half a second each on two cores: about a second of one stage
        spark.range(4, numPartitions=4).selectExpr("reflect('java.lang.Thread', 'sleep', cast(500 as bigint))").collect()
    lines = [r.getMessage() for r in caplog.records if r.name == "rsp.spark"]
    assert lines and all(re.fullmatch(r"slow_query: Spark: 1 stage\(s\) to finish, [0-4]/4 of their tasks done", line) for line in lines), lines
    caplog.clear()
    time.sleep(0.5)
    assert not [r for r in caplog.records if r.name == "rsp.spark"]  # the reporter stopped with the block
