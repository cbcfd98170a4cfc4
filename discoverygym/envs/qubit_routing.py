"""``QubitRouting-v0``: route benchmark circuits on device coupling graphs with as few SWAPs as possible.

The TES / SimpleTES swap-reduction task (wq-will/SimpleTES ``datasets/qubit_routing``): 24 public
benchmark circuits (RevLib / SABRE paper set, QFT, Ising) x 3 coupling graphs (a 20-qubit device,
Google Willow, IBM Heron r2 Fez) = 72 cases. TES evolves a Rust SWAP-choice routine inside its
LightSABRE engine; crates cannot be fetched here, so our action is a whole Python router:

    route(num_logical, gates, num_physical, edges, seed=0, budget_s=None)
        -> {"layout": [...], "ops": [...]}

(:mod:`discoverygym.rewards.qubit_routing` defines the result). One sandbox run per case, with a
per-case time limit. Every case is replayed gate by gate (and checked by unitary where small);
any invalid case fails the candidate with a message naming the case. Score (TES):
``sum_i weight_i * (original_cnot_added_i - 3 * swaps_i)``, maximised; the reference total is
119,874 weighted CNOTs; Qiskit's LightSABRE 20x20 scores 8,681.4 in TES's run.

Example:
    >>> import gymnasium as gym, discoverygym
    >>> env = gym.make("QubitRouting-v0", cases=["4gt13_92_q20"])   # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                                # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from discoverygym.envs.program import ProgramTask
from discoverygym.errors import InvalidSolution
from discoverygym.rewards import qubit_routing as verifier
from discoverygym.rewards.common import Score
from discoverygym.types import State

__all__ = ["DATA_DIR", "QubitRoutingTask", "make_qubit_routing"]

#: the packaged suite (circuits, topologies, suite.json, PROVENANCE).
DATA_DIR = Path(str(resources.files("discoverygym") / "data" / "qubit_routing"))
#: TES's LightSABRE 20x20 run (SimpleTES ``qiskit_lightsabre_20x20.json``): weighted CNOT reduction.
LIGHTSABRE_TES = 8681.4


@cache
def _circuit(name: str) -> verifier.Circuit:
    return verifier.parse_qasm3((DATA_DIR / "circuits" / f"{name}.qasm").read_text(encoding="utf-8"))


@cache
def _topology(name: str) -> verifier.Topology:
    return verifier.load_topology(DATA_DIR / "topologies" / f"{name}.json")


class QubitRoutingTask(ProgramTask):
    """Qubit routing on the TES suite (score = weighted CNOTs saved against the suite's reference).

    Args: see :func:`make_qubit_routing`.
    """

    name = "qubit_routing"
    title = "Qubit routing: SWAP reduction on 24 circuits x 3 devices (TES)"
    quantity = "weighted added CNOTs saved against the reference routing (one SWAP = 3 CNOTs)"
    direction = "max"
    language = "python"
    example = "qubit_routing_sabre.py"
    entry = "route"
    failure_reward = -1e9
    description = (
        "A quantum circuit acts on logical qubits; a device can apply a two-qubit gate only to two "
        "physical qubits joined by a coupling edge. Routing chooses an initial placement of the logical "
        "qubits and inserts SWAPs (each costs 3 CNOTs) so that every two-qubit gate, in the circuit's "
        "order on each qubit, runs on an edge. The suite has 24 benchmark circuits (RevLib reversible "
        "circuits, QFT, Ising models; 16 logical qubits each, CNOTs and one-qubit gates) on three graphs: "
        "q20 (a 20-qubit grid with cross braces), Google Willow (105 qubits, grid-like) and IBM Heron r2 "
        "Fez (156 qubits, heavy-hex). The score is the weighted sum over cases of (reference added "
        "CNOTs - your added CNOTs), weights 0.2 (q20) and 0.4 (willow, heron_fez); higher is better. "
        "Qiskit's LightSABRE with 20 layout and 20 routing trials reaches 8,681.4. Do not special-case "
        "the graphs by name or size: compute what you need from the graph given."
    )

    def __init__(self, cases: Any = None, topologies: Any = None, case_time_limit_s: float = 120.0,
                 memory_mb: int = 2048, use_bwrap: bool | None = None) -> None:
        from discoverygym.sandbox.python import SandboxLimits

        suite = verifier.load_suite(DATA_DIR)
        known = {c.topology for c in suite}
        if topologies is not None:
            topologies = [topologies] if isinstance(topologies, str) else list(topologies)
            unknown = sorted(set(topologies) - known)
            if unknown:
                raise ValueError(f"unknown topologies {unknown}; known: {sorted(known)}")
            suite = [c for c in suite if c.topology in topologies]
        if cases is not None:
            if isinstance(cases, int) and not isinstance(cases, bool):
                if cases < 1:
                    raise ValueError(f"cases must be >= 1, got {cases}")
                if cases > len(suite):
                    raise ValueError(f"cases/n_cases = {cases}, but the selection has only {len(suite)} cases")
                suite = suite[:cases]
            else:
                if not isinstance(cases, (str, list, tuple)):
                    raise TypeError(f"cases must be None, a count (int) or case ids (str or list of str), got {cases!r}")
                ids = [cases] if isinstance(cases, str) else list(cases)
                by_id = {c.id: c for c in suite}
                unknown = [i for i in ids if i not in by_id]
                if unknown:
                    raise ValueError(f"unknown case ids {unknown} (ids look like '4gt13_92_q20')")
                twice = sorted({i for i in ids if ids.count(i) > 1})
                if twice:
                    raise ValueError(f"case ids {twice} given more than once (each would be scored and weighted again)")
                suite = [by_id[i] for i in ids]
        if not suite:
            raise ValueError("no cases selected")
        SandboxLimits(timeout_s=case_time_limit_s, memory_mb=memory_mb)  # validates early
        self.cases = suite
        self.case_time_limit_s, self.memory_mb, self.use_bwrap = float(case_time_limit_s), memory_mb, use_bwrap

    @property
    def contract(self) -> str:  # type: ignore[override]
        """What the program defines, what it gets, what it returns, and the limits."""
        return (
            "Define `route(num_logical, gates, num_physical, edges, seed=0, budget_s=None)` (any subset of "
            "the keyword arguments). `gates` is the circuit's list of two-qubit gates `[a, b]` (logical "
            "qubits, in circuit order; one-qubit gates are placed by the scorer), `edges` the undirected "
            "coupling edges `[p, q]`. Return `{\"layout\": L, \"ops\": OPS}`: L[l] is the physical qubit of "
            "logical qubit l at the start (distinct, all num_logical qubits placed); OPS lists, in order, "
            "either an int i (run gates[i] now: it must come after every earlier gate sharing one of its "
            "qubits, and its two logical qubits must sit on a coupling edge) or a pair [p, q] (a SWAP on "
            "edge p-q). Every gate must run exactly once. OPS may hold at most len(gates) x (2 x graph "
            "diameter + 1) + num_physical entries. The scorer replays this and counts SWAPs; it "
            "never reads a claimed cost. Python standard library and numpy are available; the program "
            f"runs once per case in a sandbox without network, {self.case_time_limit_s:g} s and "
            f"{self.memory_mb} MB per case (`budget_s` = 80% of the limit). One invalid or failed case "
            "fails the candidate."
        )

    @property
    def sota(self) -> dict:
        """TES's LightSABRE 20x20 (the strong baseline of the task) on the full suite."""
        return {"value": LIGHTSABRE_TES, "source": "Qiskit LightSABRE 20x20 layout/swap trials, TES run "
                "(SimpleTES qiskit_lightsabre_20x20.json), full 72-case suite"}

    def initial_program(self) -> str:
        """Our Python SABRE (``discoverygym/examples/qubit_routing_sabre.py``)."""
        return (resources.files("discoverygym") / "examples" / self.example).read_text()

    def evaluate(self, source: str, *, seed: int) -> Score:
        """Run ``route`` on each case in the sandbox, replay and score it.

        A case's result is refused before it is parsed when it could hold more than
        :func:`~discoverygym.rewards.qubit_routing.max_ops` ops (the sandbox's ``result_values``),
        and before the replay when it does.

        Raises:
            InvalidSolution: a case crashed, timed out, returned a malformed or invalid routing, or
                more ops than the case allows (the message names the case).
        """
        from discoverygym.sandbox.python import SandboxLimits, run_program

        limits = SandboxLimits(timeout_s=self.case_time_limit_s, memory_mb=self.memory_mb,
                               use_bwrap=self.use_bwrap)
        rows, total, elapsed = [], 0.0, 0.0
        for case in self.cases:
            circuit, topology = _circuit(case.circuit_name), _topology(case.topology)
            kwargs = {"num_logical": circuit.num_qubits, "gates": verifier.two_qubit_gates(circuit),
                      "num_physical": topology.num_qubits, "edges": [list(e) for e in sorted(topology.edges)],
                      "seed": int(seed), "budget_s": 0.8 * self.case_time_limit_s}
            # bound the parent's work before anything is parsed: at most max_ops ops, each a
            # [p, q] (3 JSON values) or an int, plus the layout and the dict (issue 40, op-count DoS)
            most = verifier.max_ops(circuit, topology)
            case_limits = replace(limits, result_values=3 * most + circuit.num_qubits + 16)
            result = run_program(source, self.entry, kwargs, case_limits)
            elapsed += result.elapsed_s
            facts = {"failed_case": case.id, "stderr": result.stderr[-2000:]}
            if not result.ok:
                hint = f" (this case allows at most {most} ops)" if "values" in (result.error or "") else ""
                raise InvalidSolution(f"case {case.id}: route failed: {result.error}{hint}", metrics=facts)
            try:
                swaps = verifier.check_routing(circuit, topology, result.value)
                if verifier.check_operator(circuit, topology, result.value) is False:
                    raise InvalidSolution("routed circuit's unitary differs from the input's")
            except InvalidSolution as exc:
                raise InvalidSolution(f"case {case.id}: invalid routing: {exc}", metrics=facts) from None
            added = verifier.CNOTS_PER_SWAP * swaps
            total += case.weight * (case.reference_cnots - added)
            rows.append({"id": case.id, "topology": case.topology, "weight": case.weight,
                         "reference_cnots": case.reference_cnots, "added_cnots": added,
                         "seconds": round(result.elapsed_s, 3)})
        metrics = {"cases": rows, "case_scores": [-float(r["added_cnots"]) for r in rows],
                   "weighted_added_cnots": sum(r["weight"] * r["added_cnots"] for r in rows),
                   "weighted_reference_cnots": sum(r["weight"] * r["reference_cnots"] for r in rows),
                   "sandbox_s": elapsed}
        return Score(total, metrics)

    def report(self, state: State) -> list[tuple[str, str]]:
        """CLI rows: weighted added CNOTs against the reference, per topology."""
        rows = state.metadata.get("cases") or []
        out = []
        for top in sorted({r["topology"] for r in rows}):
            sel = [r for r in rows if r["topology"] == top]
            added = sum(r["weight"] * r["added_cnots"] for r in sel)
            ref = sum(r["weight"] * r["reference_cnots"] for r in sel)
            text = f"weighted added CNOTs {added:.1f} vs reference {ref:.1f} (saved {ref - added:.1f})"
            out.append((f"{top} ({len(sel)} cases)", text))
        return out


def make_qubit_routing(cases: Any = None, topologies: Any = None, case_time_limit_s: float = 120.0, *,
                       n_cases: int | None = None, memory_mb: int = 2048, use_bwrap: bool | None = None,
                       device: str | None = None) -> QubitRoutingTask:
    """Factory of ``QubitRouting-v0``.

    Args:
        cases: ``None`` (all 72), a count (the first n suite cases; more than the selection has is
            an error) or case ids (``"4gt13_92_q20"``).
        topologies: ``None`` (all) or names among ``q20``, ``willow``, ``heron_fez``.
        case_time_limit_s: wall-clock limit of one case's sandbox run (start-up included).
        n_cases: the first n cases (the CLI's ``--n-cases``; same as an int ``cases``).
        memory_mb: address-space limit of a case's run.
        use_bwrap: sandbox's bubblewrap choice (None: when available).
        device: accepted for the CLI's ``--device``; only ``None``/``"cpu"``.

    Raises:
        ValueError: unknown or repeated case ids, unknown topologies, an empty selection, a count
            beyond the selection, bad limits, a
            non-CPU device, both ``cases`` and ``n_cases``.
        TypeError: ``cases`` not None, an int, a str or a list of str; ``n_cases`` not an int.
    """
    if device not in (None, "cpu"):
        raise ValueError(f"QubitRouting-v0 runs on the CPU; got device={device!r}")
    if n_cases is not None:
        if cases is not None:
            raise ValueError("give cases or n_cases, not both")
        try:
            cases = int(n_cases)
        except (TypeError, ValueError):
            raise TypeError(f"n_cases must be an int, got {n_cases!r}") from None
    return QubitRoutingTask(cases=cases, topologies=topologies, case_time_limit_s=case_time_limit_s,
                            memory_mb=memory_mb, use_bwrap=use_bwrap)
