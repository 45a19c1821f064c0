"""The physical planning stage: an optimized logical plan and the statistics of the slice it
reads become the named steps the Spark layer runs (``planner.plan_windows``)."""
