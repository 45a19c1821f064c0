"""The DOTR plans' former module name (the module is ``dotr.py`` now, as "rules" also names the
optimizer's rewrites and Datalog). Kept only while ``rsp_jobs.spark.rules``, which is being
rewritten, imports it; it goes once that module imports ``rsp_jobs.algebra.dotr``."""

from rsp_jobs.algebra.dotr import FactGroup, RulePlan, RuleSetPlan

__all__ = ["FactGroup", "RulePlan", "RuleSetPlan"]
