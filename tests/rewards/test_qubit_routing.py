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
