"""AtCoder Heuristic Contest problems judged on C++ programs: AHC039 and AHC058.

* :mod:`.textio`: token and line parsing with the official tools' rules (Rust ``str::parse``).
* :mod:`.ahc039`, :mod:`.ahc058`: input generators (seeded, from each statement's generation
  procedure) and scorers (every validity rule of the statement, with the official tester's
  verdicts).
* :mod:`.cases`: cases, verdicts and reports, and the scoring of one case's output (compiling and
  running the cases in the native sandbox is :mod:`discoverygym.sandbox.ahc_judge`).
* :mod:`.standings`: where a 150-case total would have placed in the contest.
"""

from discoverygym.rewards.ahc.textio import AHCInvalid

__all__ = ["AHCInvalid"]
