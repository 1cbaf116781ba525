"""`python -m tests.conformance [suite ...]`: run every conformance case and print passing / total per suite.

Counts come from running the cases (a case passes when its runner raises nothing); cases marked as known
bugs count as not passing until the bug is fixed. `-v` also lists each failing case and why.
"""

from __future__ import annotations

import sys

from tests.conformance.suites import SUITES


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    wanted = [arg for arg in argv if not arg.startswith("-")]
    parts = []
    for suite in SUITES:
        if wanted and suite.name not in wanted:
            continue
        run, cases = suite.run(), suite.cases()
        passed = 0
        for case in cases:
            try:
                run(case)
            except AssertionError as error:
                if verbose:
                    reason = (
                        f"known bug: {case.known_bug}"
                        if case.known_bug
                        else str(error).splitlines()[-1][:160]
                    )
                    print(f"  FAIL {suite.name}: {case.source.path} :: {case.it} -- {reason}")
            else:
                passed += 1
        parts.append(f"{suite.name} {passed}/{len(cases)}")
    print(", ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
