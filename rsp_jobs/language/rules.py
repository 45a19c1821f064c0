"""The DOTR rule language's former module name (the module is ``dotr.py`` now, as "rules" also
names the optimizer's rewrites and Datalog). Kept only while ``rsp_jobs.spark.rules``, which is
being rewritten, imports it; it goes once that module imports ``rsp_jobs.language.dotr``."""

from rsp_jobs.language.dotr import SEP, Between, Within, expr_vars, split_qualified

__all__ = ["SEP", "Between", "Within", "expr_vars", "split_qualified"]
