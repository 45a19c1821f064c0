"""Reasoning: entailment regimes and Datalog rules over background knowledge and stream frames (DESIGN.md,
"Reasoning")."""
