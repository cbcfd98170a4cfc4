"""Search over candidate solutions: the state archive, reuse rules and wrappers, the (C, L, K, Φ)
evolutionary-search runner and its executors.

Modules: :mod:`~discoverygym.search.archive` (states + lineage), :mod:`~discoverygym.search.puct`
(TTT-Discover App. A.2), :mod:`~discoverygym.search.rpucg` (TES), :mod:`~discoverygym.search.rule`
(the rule protocol, a leaf), :mod:`~discoverygym.search.selectors` (baselines + the registry), :mod:`~discoverygym.search.reuse` (the reuse wrapper),
:mod:`~discoverygym.search.executors` (local process pool / Ray), :mod:`~discoverygym.search.evolution`
(the runner), :mod:`~discoverygym.search.checks` (up-front configuration checks),
:mod:`~discoverygym.search.runlog` (run directory), :mod:`~discoverygym.cli.search`
(``discoverygym search``).
"""

from discoverygym.search.archive import Archive, solution_key
from discoverygym.search.puct import PUCT, PUCTConfig
from discoverygym.search.reuse import ReuseWrapper
from discoverygym.search.rpucg import RPUCG, RPUCGConfig
from discoverygym.search.rule import Selector
from discoverygym.search.selectors import SELECTORS, make_selector

__all__ = [
    "PUCT",
    "RPUCG",
    "SELECTORS",
    "Archive",
    "PUCTConfig",
    "RPUCGConfig",
    "ReuseWrapper",
    "Selector",
    "make_selector",
    "solution_key",
]
