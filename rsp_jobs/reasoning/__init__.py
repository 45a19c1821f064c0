"""Reasoning: entailment regimes over background knowledge and stream frames (DESIGN.md,
"Reasoning")."""
