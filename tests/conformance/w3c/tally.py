"""Run every applicable W3C test once and print how each folder fares, with each failure's
first line: ``.venv/bin/python -m tests.conformance.w3c.tally [--write]``. ``--write`` puts
the failures into expected_failures.toml (review the reasons before committing them)."""

from __future__ import annotations

import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from rsp_jobs import settings
from tests.conformance.w3c.support import (
    EXPECTED_FAILURES,
    evaluation_tests,
    run,
    syntax_outcome,
    syntax_tests,
)


def main() -> None:
    suite = settings.data_dir() / "w3c-sparql11"
    failures: dict[str, str] = {}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for test in (t for t in evaluation_tests(suite) if t.applicable):
        folder = test.id.split("/")[0]
        counts[folder][1] += 1
        with tempfile.TemporaryDirectory() as tmp:
            try:
                got, expected = run(test, Path(tmp))
                reason = None if got.same_as(expected) else "wrong answer"
            except Exception as err:  # the tally records whatever the engine says
                reason = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        if reason is None:
            counts[folder][0] += 1
        else:
            failures[test.id] = reason
        print(f"{test.id}: {reason or 'passed'}", flush=True)
    for test in syntax_tests(suite):
        counts["syntax-query"][1] += 1
        reason = syntax_outcome(test)
        if reason is None:
            counts["syntax-query"][0] += 1
        else:
            failures[test.id] = reason
    for folder, (passed, total) in sorted(counts.items()):
        print(f"{folder}: {passed}/{total}")
    if "--write" in sys.argv:
        lines = ["# The W3C tests expected to fail, each with why (README.md).", "[failures]"]
        lines += [f"{json.dumps(k)} = {json.dumps(v, ensure_ascii=False)}"
                  for k, v in sorted(failures.items())]
        EXPECTED_FAILURES.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
