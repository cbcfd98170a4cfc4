"""Interop with other evolutionary-search tools: run discoverygym problems from their own loops.

:mod:`discoverygym.interop.openevolve` writes what `OpenEvolve <https://github.com/algorithmicsuperintelligence/openevolve>`_
needs to search any discoverygym env (initial program with ``EVOLVE-BLOCK`` markers, an
``evaluator.py`` that judges with discoverygym's env, a ``config.yaml``) and holds the evaluator's
logic, so the score OpenEvolve records is discoverygym's verified score.
:mod:`discoverygym.interop.trl`: a prompt dataset and a reward function (judged by the env) for TRL's trainers.

Layer: beside ``agents`` (``trl`` reuses the agents' prompts and response parser; nothing below imports
interop), below ``cli`` (``discoverygym export``).
"""

from __future__ import annotations

from discoverygym.interop.openevolve import (
    FAILURE_KEYS,
    evaluate_program_file,
    export_openevolve,
    initial_program,
    judge,
    metrics_of,
    with_evolve_markers,
)

__all__ = ["FAILURE_KEYS", "evaluate_program_file", "export_openevolve", "initial_program", "judge", "metrics_of",
           "with_evolve_markers"]
