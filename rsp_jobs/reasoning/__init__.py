"""Reasoning: entailment regimes and Datalog rules over background knowledge and stream frames
(../shared/DESIGN.md, "Reasoning")."""
