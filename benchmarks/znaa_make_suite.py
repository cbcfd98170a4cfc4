"""Regenerate the ZonedNeutralAtom-v0 circuit suite (``circuits/*.qasm``) from Qiskit and our own generators.

Run from the repository root (needs ``qiskit``, the ``[quantum]`` extra)::

    python benchmarks/znaa_make_suite.py

Each circuit is built here (the textbook construction named in PROVENANCE), transpiled by Qiskit to
the machine's gate set ``u`` + ``cz`` (``optimization_level=1``, ``seed_transpiler=0``) and written
as OpenQASM 2. Deterministic: the same Qiskit version writes the same files.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from qiskit import QuantumCircuit, QuantumRegister, qasm2, transpile
from qiskit.circuit.library import CDKMRippleCarryAdder, PhaseGate, QFTGate, efficient_su2, phase_estimation

HERE = Path(__file__).resolve().parents[1] / "discoverygym" / "data" / "znaa"


def _qc(n: int) -> QuantumCircuit:
    return QuantumCircuit(QuantumRegister(n, "q"))


def ghz(n: int) -> QuantumCircuit:
    """GHZ state by a CNOT chain 0 -> 1 -> ... -> n-1."""
    qc = _qc(n)
    qc.h(0)
    for i in range(n - 1):
        qc.cx(i, i + 1)
    return qc


def cat(n: int) -> QuantumCircuit:
    """Cat (GHZ) state by fan-out: CNOTs from qubit 0 to every other qubit."""
    qc = _qc(n)
    qc.h(0)
    for i in range(1, n):
        qc.cx(0, i)
    return qc


def bv(n: int) -> QuantumCircuit:
    """Bernstein-Vazirani on n-1 data qubits, secret string all ones, ancilla n-1."""
    qc = _qc(n)
    qc.x(n - 1)
    qc.h(range(n))
    for i in range(n - 1):
        qc.cx(i, n - 1)
    qc.h(range(n - 1))
    return qc


def qft(n: int) -> QuantumCircuit:
    """Quantum Fourier transform (Qiskit's QFTGate, with the final swaps)."""
    qc = _qc(n)
    qc.append(QFTGate(n), range(n))
    return qc


def adder(n: int) -> QuantumCircuit:
    """Cuccaro ripple-carry adder (Qiskit's CDKMRippleCarryAdder, kind 'full'): n = 2k + 2 qubits."""
    k = (n - 2) // 2
    qc = _qc(n)
    qc.x([0, k + 1])  # fixed inputs a = 1, b = 1
    qc.append(CDKMRippleCarryAdder(k, kind="full"), range(n))
    return qc


def ising(n: int, steps: int = 2) -> QuantumCircuit:
    """Trotterised 1D transverse-field Ising chain: RZZ on even then odd bonds, RX on every qubit."""
    qc = _qc(n)
    qc.h(range(n))
    for _ in range(steps):
        for start in (0, 1):
            for i in range(start, n - 1, 2):
                qc.rzz(0.3, i, i + 1)
        qc.rx(0.2, range(n))
    return qc


def wstate(n: int) -> QuantumCircuit:
    """W state by the linear cascade: X, then per qubit a controlled RY and a CNOT back."""
    qc = _qc(n)
    qc.x(0)
    for i in range(n - 1):
        theta = 2 * math.acos(math.sqrt(1 / (n - i)))
        qc.cry(theta, i, i + 1)
        qc.cx(i + 1, i)
    return qc


def graph_state(n: int, degree: int = 3, seed: int = 7) -> QuantumCircuit:
    """Graph state of a ring plus seeded random chords (about ``degree`` edges a vertex): H, then CZ per edge."""
    rng = np.random.default_rng(seed)
    edges = {(i, (i + 1) % n) for i in range(n)}
    while len(edges) < degree * n // 2:
        a, b = sorted(int(v) for v in rng.choice(n, 2, replace=False))
        edges.add((a, b))
    qc = _qc(n)
    qc.h(range(n))
    for a, b in sorted(edges):
        qc.cz(a, b)
    return qc


def swap_test(n: int, seed: int = 3) -> QuantumCircuit:
    """Swap test of two (n-1)/2-qubit product states: ancilla 0, controlled SWAPs pair by pair."""
    k = (n - 1) // 2
    rng = np.random.default_rng(seed)
    qc = _qc(n)
    for q in range(1, n):
        qc.ry(float(rng.uniform(0, math.pi)), q)
    qc.h(0)
    for i in range(k):
        qc.cswap(0, 1 + i, 1 + k + i)
    qc.h(0)
    return qc


def vqe(n: int, seed: int = 5) -> QuantumCircuit:
    """Hardware-efficient VQE ansatz (Qiskit's efficient_su2, linear entanglement, 3 reps, seeded angles)."""
    ansatz = efficient_su2(n, reps=3, entanglement="linear")
    values = np.random.default_rng(seed).uniform(0, 2 * math.pi, ansatz.num_parameters)
    qc = _qc(n)
    qc.compose(ansatz.assign_parameters(values), range(n), inplace=True)
    return qc


def qpe(n: int) -> QuantumCircuit:
    """Quantum phase estimation of a phase gate (phase 2π·0.3125) on n-1 counting qubits."""
    qc = _qc(n)
    qc.x(n - 1)
    qc.compose(phase_estimation(n - 1, PhaseGate(2 * math.pi * 0.3125)), range(n), inplace=True)
    return qc


#: file stem -> builder; sizes chosen so the suite judges in seconds on one CPU.
SUITE = {
    "ghz_n20": lambda: ghz(20), "ghz_n40": lambda: ghz(40), "cat_n22": lambda: cat(22),
    "bv_n14": lambda: bv(14), "bv_n50": lambda: bv(50), "qft_n10": lambda: qft(10), "qft_n20": lambda: qft(20),
    "adder_n10": lambda: adder(10), "adder_n28": lambda: adder(28), "ising_n10": lambda: ising(10),
    "ising_n42": lambda: ising(42), "wstate_n27": lambda: wstate(27), "graph_state_n30": lambda: graph_state(30),
    "swap_test_n25": lambda: swap_test(25), "vqe_n12": lambda: vqe(12), "qpe_n9": lambda: qpe(9),
}


def main() -> None:
    """Write every circuit of :data:`SUITE` to ``circuits/<name>.qasm``."""
    out = HERE / "circuits"
    out.mkdir(exist_ok=True)
    for name, build in SUITE.items():
        qc = transpile(build(), basis_gates=["u", "cz"], optimization_level=1, seed_transpiler=0)
        (out / f"{name}.qasm").write_text(qasm2.dumps(qc) + "\n", encoding="utf-8")
        ops = qc.count_ops()
        print(f"{name:16s} qubits {qc.num_qubits:3d}  cz {ops.get('cz', 0):5d}  u {ops.get('u', 0):5d}")


if __name__ == "__main__":
    main()
