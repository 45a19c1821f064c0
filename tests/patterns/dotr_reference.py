"""A brute-force DOTR/TESLA rule evaluator in plain Python, the reference for
``rsp_jobs.spark.dotr``: it enumerates, for every trigger fact in time order, every fact of
every event in its scope and applies the definitions directly.

- scope of ``X within d from R``: ``t_R - d <= t_X < t_R``;
- ``last``: latest fact (ties: smallest key); ``first``: earliest (ties: smallest key);
  ``each``: all; selected among the facts satisfying the conditions bound at that event;
- ``not C``: no C fact in scope satisfying its conditions; aggregates over the G facts in
  scope satisfying theirs (empty avg/sum/count = 0, empty min/max = None);
- consumption: a consumed fact is not a candidate; a match's consumed facts are consumed once
  its trigger has been processed; triggers in (time, key) order;
- facts are a bag (DOTR §4: a query gives "zero, one, or more facts"): equal solutions of one
  instant are distinct facts, told apart by ``copy`` (``numbered``).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass(frozen=True)
class Fact:
    label: str
    t: int
    bindings: tuple[tuple[str, str], ...]  # sorted (variable, N-Triples term)
    copy: int = 0  # how many equal solutions of the instant come before this one

    @property
    def key(self) -> str:
        text = "\n".join(f"{n}={v}" for n, v in self.bindings)
        return f"{self.label}@{self.t}#{hashlib.sha1(text.encode()).hexdigest()[:12]}" + (
            f".{self.copy}" if self.copy else "")

    def __getitem__(self, name: str) -> str:
        return dict(self.bindings)[name]


def fact(label: str, t: int, **bindings: str) -> Fact:
    return Fact(label, t, tuple(sorted(bindings.items())))


def numbered(facts: list[Fact]) -> list[Fact]:
    """Equal solutions as distinct facts: the n-th repetition of (label, t, bindings) is copy n."""
    seen: dict = {}
    out = []
    for f in facts:
        n = seen.get((f.label, f.t, f.bindings), 0)
        seen[(f.label, f.t, f.bindings)] = n + 1
        out.append(Fact(f.label, f.t, f.bindings, n))
    return out


Env = dict  # label -> Fact


@dataclass
class Spec:
    trigger: str
    positives: list[tuple[str, str, int, str]] = field(default_factory=list)  # label, policy, us, ref
    negatives: list[tuple[str, int, str]] = field(default_factory=list)  # label, us, ref
    conditions: list[tuple[tuple[str, ...], Callable[[Env], bool]]] = field(default_factory=list)
    aggregates: list[tuple[str, str, str, int, str]] = field(default_factory=list)  # fn, label, var, us, ref
    post: Optional[Callable[[Env, list], bool]] = None
    consumes: tuple[str, ...] = ()


def _holds(spec: Spec, env: Env, label: str) -> bool:
    """The conditions whose labels are all in env and that mention ``label``."""
    return all(test(env) for labels, test in spec.conditions
               if label in labels and all(l in env for l in labels))


def _in_scope(f: Fact, env: Env, us: int, ref: str) -> bool:
    return env[ref].t - us <= f.t < env[ref].t


def _aggregate(fn: str, values: list[float]):
    if fn == "count":
        return len(values)
    if fn == "sum":
        return sum(values)
    if fn == "avg":
        return sum(values) / len(values) if values else 0
    if not values:
        return None
    return min(values) if fn == "min" else max(values)


def evaluate(spec: Spec, facts: list[Fact], after: Optional[int] = None, until: Optional[int] = None,
             consumed: frozenset = frozenset()) -> tuple[list[tuple[int, dict, list]], set]:
    """``[(time, {label: key}, aggregate values)]`` sorted, and the newly consumed keys."""
    by_label: dict[str, list[Fact]] = {}
    for f in set(facts):
        by_label.setdefault(f.label, []).append(f)
    used = set(consumed)
    newly: set = set()
    out = []
    triggers = sorted(by_label.get(spec.trigger, []), key=lambda f: (f.t, f.key))
    for a in triggers:
        if (after is not None and a.t <= after) or (until is not None and a.t > until) or a.key in used:
            continue
        envs = [{spec.trigger: a}] if _holds(spec, {spec.trigger: a}, spec.trigger) else []
        for label, policy, us, ref in spec.positives:
            extended = []
            for env in envs:
                candidates = [f for f in by_label.get(label, []) if f.key not in used
                              and _in_scope(f, env, us, ref) and _holds(spec, {**env, label: f}, label)]
                if not candidates:
                    continue
                if policy == "last":
                    candidates = [min(candidates, key=lambda f: (-f.t, f.key))]
                elif policy == "first":
                    candidates = [min(candidates, key=lambda f: (f.t, f.key))]
                extended += [{**env, label: f} for f in candidates]
            envs = extended
        fired = []
        for env in envs:
            if any(any(_in_scope(f, env, us, ref) and _holds(spec, {**env, label: f}, label)
                       for f in by_label.get(label, [])) for label, us, ref in spec.negatives):
                continue
            values = []
            for fn, label, var, us, ref in spec.aggregates:
                values.append(_aggregate(fn, [float(_number(f[var])) for f in by_label.get(label, [])
                                              if _in_scope(f, env, us, ref) and _holds(spec, {**env, label: f}, label)]))
            if spec.post is not None and not spec.post(env, values):
                continue
            fired.append(env)
            out.append((a.t, {l: f.key for l, f in env.items()}, values))
        for env in fired:
            for label in spec.consumes:
                used.add(env[label].key)
                newly.add(env[label].key)
    out.sort(key=lambda m: (m[0], sorted(m[1].items())))
    return out, newly


def _number(term: str) -> float:
    """The value of an N-Triples numeric literal ``"12"^^<...#integer>``."""
    return float(term.split('"')[1])
