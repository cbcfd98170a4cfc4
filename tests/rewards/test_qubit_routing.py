"""The qubit-routing verifier against the packaged suite's published totals and Qiskit's own routing."""

from __future__ import annotations

import json
import re

import pytest

from discoverygym.envs.qubit_routing import DATA_DIR, _circuit, _topology
from discoverygym.errors import InvalidSolution
from discoverygym.rewards import qubit_routing as verifier

qiskit = pytest.importorskip("qiskit")


def test_suite_totals_are_the_published_ones():
    suite = verifier.load_suite(DATA_DIR)
    assert len(suite) == 72
    assert sum(c.weight * c.reference_cnots for c in suite) == pytest.approx(119_874)  # SimpleTES
    records = json.loads((DATA_DIR / "qiskit_lightsabre_20x20.json").read_text())["rust_results"]["cases"]
    ref = {c.id: c for c in suite}
    assert sum(ref[r["id"]].weight * (ref[r["id"]].reference_cnots - r["additional_cnot_added"])
               for r in records) == pytest.approx(8681.4)


def test_parser_reads_every_gate_of_the_file():
    for name in ("4gt13_92", "qft_10", "ising_model_10"):
        text = (DATA_DIR / "circuits" / f"{name}.qasm").read_text()
        circuit = verifier.parse_qasm3(text)
        assert circuit.num_qubits == 16
        assert len(verifier.two_qubit_gates(circuit)) == len(re.findall(r"^cx ", text, re.MULTILINE))
        assert len(circuit.ops) == len(re.findall(r"^[a-z]+(\(.*\))? q\[", text, re.MULTILINE))


@pytest.mark.parametrize("case", ["alu-v0_27_willow", "4gt13_92_heron_fez"])
def test_qiskit_routing_validates_and_its_swaps_are_counted(case):
    from qiskit.transpiler import CouplingMap, PassManager
    from qiskit.transpiler.passes import SabreLayout

    name, top = case.rsplit("_", 1) if not case.endswith("heron_fez") else (case[:-10], "heron_fez")
    circuit, topology = _circuit(name), _topology(top)
    routed = PassManager([SabreLayout(CouplingMap(sorted(topology.edges)), seed=1)]).run(verifier.to_qiskit(circuit))
    result = verifier.from_qiskit(circuit, routed)
    assert verifier.check_routing(circuit, topology, result) == routed.count_ops().get("swap", 0)
    assert verifier.check_operator(circuit, topology, result) is True


def test_out_of_order_and_reversed_gates_are_refused():
    circuit, topology = _circuit("4mod5-v1_22"), _topology("q20")
    from qiskit.transpiler import CouplingMap, PassManager
    from qiskit.transpiler.passes import SabreLayout

    routed = PassManager([SabreLayout(CouplingMap(sorted(topology.edges)), seed=1)]).run(verifier.to_qiskit(circuit))
    result = verifier.from_qiskit(circuit, routed)
    gates = verifier.two_qubit_gates(circuit)
    later = next(g for g in range(1, len(gates)) if set(gates[0]) & set(gates[g]))  # next gate sharing a qubit
    swapped = list(result["ops"])
    i, j = swapped.index(0), swapped.index(later)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    # running that gate before gate 0 breaks the order on their shared qubit
    with pytest.raises(InvalidSolution, match="dependency order"):
        verifier.check_routing(circuit, topology, {"layout": result["layout"], "ops": swapped})
    with pytest.raises(InvalidSolution, match="executed twice"):
        verifier.check_routing(circuit, topology, {"layout": result["layout"], "ops": [*result["ops"], 0]})
    with pytest.raises(InvalidSolution, match="layout puts"):
        verifier.check_routing(circuit, topology, {"layout": [0] * 16, "ops": []})
    # control and target exchanged in Qiskit's output: not the input's gate
    bad = routed.copy_empty_like()
    flipped = False
    for ins in routed.data:
        if ins.operation.name == "cx" and not flipped:
            bad.append(ins.operation, ins.qubits[::-1])
            flipped = True
        else:
            bad.append(ins)
    with pytest.raises(InvalidSolution):
        verifier.from_qiskit(circuit, bad)


def test_a_swap_of_two_unoccupied_qubits_is_valid_and_only_costs_its_cnots():
    """Issue 40 #9: check_operator assumed unoccupied qubits never move and refused this routing."""
    from qiskit.circuit.library import SwapGate
    from qiskit.quantum_info import Operator
    from qiskit.transpiler import CouplingMap, PassManager
    from qiskit.transpiler.passes import SabreLayout

    circuit, topology = _circuit("4gt13_92"), _topology("q20")
    routed = PassManager([SabreLayout(CouplingMap(sorted(topology.edges)), seed=1)]).run(verifier.to_qiskit(circuit))
    plain = verifier.from_qiskit(circuit, routed)
    occupied = set(plain["layout"])
    p, q = next(e for e in sorted(topology.edges) if not set(e) & occupied)
    extra = {"layout": plain["layout"], "ops": [[p, q], *plain["ops"]]}
    # ground truth (Qiskit): the routed circuit with the extra SWAP is the plain one after a SWAP of two
    # wires that carry no logical qubit, i.e. the same computation with two idle wires relabelled
    with_swap, _ = verifier.routed_circuit(circuit, topology, extra)
    without, _ = verifier.routed_circuit(circuit, topology, plain)
    wires = sorted({with_swap.find_bit(b).index for ins in with_swap.data for b in ins.qubits})
    small = {w: i for i, w in enumerate(wires)}

    def restricted(qc, front_swap=False):
        out = verifier.to_qiskit(verifier.Circuit(len(wires), ()))
        if front_swap:
            out.append(SwapGate(), [small[p], small[q]])
        for ins in qc.data:
            out.append(ins.operation, [small[qc.find_bit(b).index] for b in ins.qubits])
        return Operator(out)

    assert restricted(with_swap).equiv(restricted(without, front_swap=True))
    assert verifier.check_operator(circuit, topology, plain) is True
    assert verifier.check_operator(circuit, topology, extra) is True  # False on main
    assert verifier.check_routing(circuit, topology, extra) == verifier.check_routing(circuit, topology, plain) + 1
