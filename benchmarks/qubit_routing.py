"""QubitRouting-v0 baselines per topology: reference, LightSABRE 20x20 (TES and ours), Qiskit default, our SABRE.

Every routing except TES's records is judged by our scorer (:func:`discoverygym.rewards.qubit_routing.check_routing`,
plus the unitary check where at most 8 physical qubits are touched): Qiskit's routed circuits are read
back with ``from_qiskit`` and replayed gate by gate; our initial program runs through the env's task
(one sandbox run per case). Columns: weighted added CNOTs (weights 0.2 q20, 0.4 willow/heron_fez)
and the weighted reduction against the suite's reference (higher is better).

``--reproduce`` also routes every case with a few Qiskit configurations (seed 42) and counts
the cases whose added CNOTs equal the suite's ``original_cnot_added``.

Usage::

    python benchmarks/qubit_routing.py                    # full suite (several minutes on 2 cores)
    python benchmarks/qubit_routing.py --cases 4gt13_92_q20,qft_10_willow --reproduce
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

from rich.console import Console
from rich.table import Table

from discoverygym.envs.qubit_routing import DATA_DIR, QubitRoutingTask, _circuit, _topology
from discoverygym.errors import InvalidSolution
from discoverygym.rewards import qubit_routing as verifier


def qiskit_routing(case: verifier.Case, kind: str) -> tuple[int | None, str | None]:
    """Added CNOTs of a Qiskit routing of one case judged by our scorer, or (None, reason) when invalid."""
    from qiskit.transpiler import CouplingMap, PassManager, StagedPassManager
    from qiskit.transpiler.passes import SabreLayout
    from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager

    circuit, topology = _circuit(case.circuit_name), _topology(case.topology)
    cmap = CouplingMap(sorted(topology.edges))
    if kind == "lightsabre20":
        pm = PassManager([SabreLayout(cmap, seed=42, layout_trials=20, swap_trials=20, max_iterations=4)])
    elif kind == "sabre-default":
        pm = PassManager([SabreLayout(cmap, seed=42)])
    elif kind.startswith("preset"):  # Qiskit's preset pass manager, layout + routing stages only
        full = generate_preset_pass_manager(optimization_level=int(kind[-1]), coupling_map=cmap, seed_transpiler=42)
        pm = StagedPassManager(stages=["layout", "routing"], layout=full.layout, routing=full.routing)
    else:
        raise ValueError(kind)
    routed = pm.run(verifier.to_qiskit(circuit))
    try:
        result = verifier.from_qiskit(circuit, routed)
        swaps = verifier.check_routing(circuit, topology, result)
        if verifier.check_operator(circuit, topology, result) is False:
            return None, "unitary differs"
    except InvalidSolution as exc:
        return None, str(exc)
    return verifier.CNOTS_PER_SWAP * swaps, None


def main() -> None:
    """Print the per-topology table (and the reproduction summary with ``--reproduce``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=None, help="comma-separated case ids (default: all 72)")
    parser.add_argument("--reproduce", action="store_true", help="try Qiskit configurations against the reference")
    parser.add_argument("--no-initial", action="store_true", help="skip our initial program (sandbox runs)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    suite = verifier.load_suite(DATA_DIR)
    if args.cases:
        wanted = args.cases.split(",")
        suite = [c for c in suite if c.id in wanted]
    tes = {r["id"]: r["additional_cnot_added"] for r in json.loads(
        (DATA_DIR / "qiskit_lightsabre_20x20.json").read_text())["rust_results"]["cases"]}
    columns = {"reference": {c.id: c.reference_cnots for c in suite},
               "LightSABRE 20x20 (TES run)": {c.id: tes[c.id] for c in suite}}
    timings, invalid = {}, {}
    for label, kind in (("LightSABRE 20x20 (ours)", "lightsabre20"), ("Qiskit default (level 2)", "preset2")):
        start, col = time.perf_counter(), {}
        for case in suite:
            col[case.id], why = qiskit_routing(case, kind)
            if why:
                invalid.setdefault(label, []).append(f"{case.id}: {why}")
        columns[label], timings[label] = col, time.perf_counter() - start
    if not args.no_initial:
        task = QubitRoutingTask(cases=[c.id for c in suite])
        start = time.perf_counter()
        score = task.evaluate(task.initial_program(), seed=42)
        columns["our SABRE (initial program)"] = {r["id"]: r["added_cnots"] for r in score.metrics["cases"]}
        timings["our SABRE (initial program)"] = time.perf_counter() - start
    console = Console(width=170)
    table = Table(title=f"QubitRouting-v0: weighted added CNOTs (reduction vs reference), {len(suite)} cases")
    table.add_column("router")
    tops = [t for t in ("q20", "willow", "heron_fez") if any(c.topology == t for c in suite)]
    for t in [*tops, "total"]:
        table.add_column(t, justify="right")
    table.add_column("valid", justify="right")
    table.add_column("time (s)", justify="right")
    for label, col in columns.items():
        cells = []
        for t in [*tops, "total"]:
            sel = [c for c in suite if t in ("total", c.topology)]
            ref = sum(c.weight * c.reference_cnots for c in sel)
            got = sum(c.weight * (col[c.id] if col[c.id] is not None else c.reference_cnots) for c in sel)
            cells.append(f"{got:,.1f} ({ref - got:+,.1f})")
        ok = sum(col[c.id] is not None for c in suite)
        table.add_row(label, *cells, f"{ok}/{len(suite)}", f"{timings.get(label, float('nan')):.1f}")
    console.print(table)
    for label, rows in invalid.items():
        console.print(f"[red]{label} invalid cases:[/red] " + "; ".join(rows[:5]))
    if args.reproduce:
        kinds = ["sabre-default", "lightsabre20", "preset1", "preset2", "preset3"]
        rep = Table(title="reproducing original_cnot_added (Qiskit 2.6.2, seed 42): cases matching exactly")
        rep.add_column("configuration")
        rep.add_column("matches", justify="right")
        rep.add_column("mean |diff| (CNOTs)", justify="right")
        for kind in kinds:
            col = columns.get({"lightsabre20": "LightSABRE 20x20 (ours)", "preset2": "Qiskit default (level 2)"}.get(kind, ""))
            col = col or {c.id: qiskit_routing(c, kind)[0] for c in suite}
            diffs = [abs(col[c.id] - c.reference_cnots) for c in suite if col[c.id] is not None]
            rep.add_row(kind, f"{sum(d == 0 for d in diffs)}/{len(suite)}", f"{sum(diffs) / max(1, len(diffs)):.1f}")
        tes_diffs = [abs(tes[c.id] - c.reference_cnots) for c in suite]
        rep.add_row("TES LightSABRE 20x20 record", f"{sum(d == 0 for d in tes_diffs)}/{len(suite)}",
                    f"{sum(tes_diffs) / len(suite):.1f}")
        ours = columns["LightSABRE 20x20 (ours)"]
        same = sum(ours[c.id] == tes[c.id] for c in suite)
        console.print(rep)
        console.print(f"our LightSABRE 20x20 equals TES's record on {same}/{len(suite)} cases")


if __name__ == "__main__":
    main()
