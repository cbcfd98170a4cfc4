"""Exact verifier of qubit routing (TES / SimpleTES swap-reduction task): validity and added CNOTs.

A router maps a circuit's logical qubits onto a device's physical qubits and inserts SWAPs so
that every two-qubit gate acts on a coupling edge. A routing here is the router's *decisions*:

* ``layout``: list, ``layout[l]`` = physical qubit holding logical qubit ``l`` at the start
  (injective, every logical qubit placed, idle ones included);
* ``ops``: list, in execution order, of ``int i`` (execute the circuit's ``i``-th two-qubit gate on
  the physical qubits its two logical qubits occupy now) or ``[p, q]`` (a SWAP on edge ``p``-``q``).

:func:`check_routing` replays the decisions gate by gate (the TES evaluator's front-layer replay,
made exact because gate indices are named): every two-qubit gate exactly once, each only after
the previous two-qubit gates on both of its qubits (the circuit's dependency order; one-qubit gates
ride along with their qubit), on a coupling edge at that moment, every SWAP on a coupling edge.
:func:`routed_circuit` builds the physical Qiskit circuit (one-qubit gates included) and
:func:`check_operator` compares its unitary with the input's, up to the initial layout and the
final permutation, where at most :data:`OPERATOR_MAX_QUBITS` physical qubits are touched.

Cost (TES): one SWAP = 3 CNOTs; a case's added CNOTs = 3 x SWAPs; the score of a suite is
``sum_i weight_i * (reference_i - added_i)`` (reference = the suite's ``original_cnot_added``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from discoverygym.errors import InvalidSolution

__all__ = ["CNOTS_PER_SWAP", "OPERATOR_MAX_QUBITS", "Case", "Circuit", "Topology", "check_operator",
           "check_routing", "diameter", "from_qiskit", "load_suite", "max_ops", "parse_qasm3", "routed_circuit",
           "to_qiskit", "two_qubit_gates"]

#: CNOTs one SWAP costs (TES: 3).
CNOTS_PER_SWAP = 3
#: largest number of touched physical qubits for the unitary (Operator) check.
OPERATOR_MAX_QUBITS = 8

_ONE_QUBIT = {"h", "x", "y", "z", "s", "sdg", "t", "tdg", "sx", "sxdg", "rx", "ry", "rz", "p", "u", "id"}
_TWO_QUBIT = {"cx", "cz", "swap"}
_GATE_RE = re.compile(r"^([a-z][a-z0-9_]*)\s*(?:\(([^)]*)\))?\s+(.+)$")
_QUBIT_RE = re.compile(r"^q\[(\d+)\]$")


@dataclass(frozen=True)
class Circuit:
    """A circuit of the suite: ``num_qubits`` logical qubits, ``ops`` = ``(name, params, qubits)`` in order."""

    num_qubits: int
    ops: tuple[tuple[str, tuple[float, ...], tuple[int, ...]], ...]


@dataclass(frozen=True)
class Topology:
    """A coupling graph: ``num_qubits`` physical qubits, ``edges`` = set of ``(min, max)`` pairs."""

    name: str
    num_qubits: int
    edges: frozenset[tuple[int, int]]


@dataclass(frozen=True)
class Case:
    """One suite case: circuit x topology, its weight and reference added CNOTs (``original_cnot_added``)."""

    id: str
    circuit_name: str
    topology: str
    weight: float
    reference_cnots: int


def _swap(l2p: dict, p2l: dict, p: int, q: int) -> None:
    """Apply a SWAP on physical qubits ``p``, ``q`` to the layout in place: ``l2p`` logical → physical,
    ``p2l`` physical → logical (a physical qubit holding no logical one has no ``p2l`` entry)."""
    lp, lq = p2l.pop(p, None), p2l.pop(q, None)
    if lp is not None:
        l2p[lp], p2l[q] = q, lp
    if lq is not None:
        l2p[lq], p2l[p] = p, lq


def parse_qasm3(text: str) -> Circuit:
    """Parse the OpenQASM 3 subset of the suite (one ``qubit[n] q;`` register, standard gates).

    Accepts ``OPENQASM``/``include``/``bit`` lines, one- and two-qubit standard gates with numeric
    parameters. Written here because Qiskit's OpenQASM 3 importers need an extra package
    (``qiskit_qasm3_import``) or panic on ``rz(-1.0)`` (the experimental one).

    Raises:
        ValueError: an unsupported statement, gate or qubit index (the message quotes the line).
    """
    num_qubits, ops = None, []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//")[0].strip()
        if not line or line.startswith(("OPENQASM", "include", "bit[", "barrier")):
            continue
        if not line.endswith(";"):
            raise ValueError(f"line {lineno}: expected ';' in {raw!r}")
        line = line[:-1].strip()
        m = re.fullmatch(r"qubit\[(\d+)\]\s+q", line)
        if m:
            num_qubits = int(m.group(1))
            continue
        m = _GATE_RE.match(line)
        if not m or num_qubits is None:
            raise ValueError(f"line {lineno}: unsupported statement {raw!r}")
        name, params_text, args = m.group(1), m.group(2), m.group(3)
        params = tuple(float(x) for x in params_text.split(",")) if params_text else ()
        qubits = []
        for arg in args.split(","):
            qm = _QUBIT_RE.match(arg.strip())
            if not qm or int(qm.group(1)) >= num_qubits:
                raise ValueError(f"line {lineno}: bad qubit {arg.strip()!r} in {raw!r}")
            qubits.append(int(qm.group(1)))
        arity = 1 if name in _ONE_QUBIT else 2 if name in _TWO_QUBIT else None
        if arity != len(qubits) or len(set(qubits)) != len(qubits):
            raise ValueError(f"line {lineno}: unsupported gate {raw!r}")
        ops.append((name, params, tuple(qubits)))
    if num_qubits is None:
        raise ValueError("no 'qubit[n] q;' declaration")
    return Circuit(num_qubits, tuple(ops))


def two_qubit_gates(circuit: Circuit) -> list[list[int]]:
    """The circuit's two-qubit gates in order as ``[[a, b], ...]`` (what a router needs to see)."""
    return [list(q) for _, _, q in circuit.ops if len(q) == 2]


def load_topology(path: str | Path) -> Topology:
    """Read a topology JSON (``{"num_qubits": n, "edges": [[p, q], ...]}``).

    Raises:
        ValueError: malformed file, an edge out of range or a self-loop.
    """
    payload = json.loads(Path(path).read_text(encoding="utf-8"))
    n = payload.get("num_qubits")
    if not isinstance(n, int) or n < 1 or not isinstance(payload.get("edges"), list):
        raise ValueError(f"{path}: need an int num_qubits >= 1 and a list of edges")
    edges = set()
    for edge in payload["edges"]:
        a, b = (int(x) for x in edge)
        if not (0 <= a < n and 0 <= b < n) or a == b:
            raise ValueError(f"{path}: bad edge {edge!r}")
        edges.add((min(a, b), max(a, b)))
    return Topology(Path(path).stem, n, frozenset(edges))


def load_suite(root: str | Path) -> list[Case]:
    """The cases of ``root/suite.json`` (circuits under ``root/circuits``, graphs under ``root/topologies``).

    The suite's ``qasm3_path`` (``circuits/SABRE/<name>.qasm`` in SimpleTES) is resolved by file
    name; ``topology_path``'s stem names the topology.

    Raises:
        ValueError: a duplicate id, a negative reference or weight, a missing file.
    """
    root = Path(root)
    cases, seen = [], set()
    for raw in json.loads((root / "suite.json").read_text(encoding="utf-8"))["cases"]:
        case = Case(str(raw["id"]), Path(raw["qasm3_path"]).stem, Path(raw["topology_path"]).stem,
                    float(raw["weight"]), int(raw["original_cnot_added"]))
        if case.id in seen or case.weight < 0 or case.reference_cnots < 0 or not math.isfinite(case.weight):
            raise ValueError(f"suite case {case.id!r}: duplicate id, or negative weight/reference")
        for path in (root / "circuits" / f"{case.circuit_name}.qasm", root / "topologies" / f"{case.topology}.json"):
            if not path.is_file():
                raise ValueError(f"suite case {case.id!r}: missing {path}")
        seen.add(case.id)
        cases.append(case)
    return cases


@cache
def diameter(topology: Topology) -> int:
    """Largest shortest-path distance (in edges) between two physical qubits of ``topology``.

    Breadth-first search from every qubit. A disconnected graph counts its unreachable pairs as
    ``num_qubits - 1`` (the longest path any graph on that many qubits can have), so the result is
    always an upper bound on how far a gate's two qubits can sit apart.
    """
    adjacent: dict[int, list[int]] = {p: [] for p in range(topology.num_qubits)}
    for a, b in topology.edges:
        adjacent[a].append(b)
        adjacent[b].append(a)
    longest = 0
    for source in range(topology.num_qubits):
        dist, frontier = {source: 0}, [source]
        while frontier:
            nxt = []
            for p in frontier:
                for q in adjacent[p]:
                    if q not in dist:
                        dist[q] = dist[p] + 1
                        nxt.append(q)
            frontier = nxt
        longest = max(longest, topology.num_qubits - 1 if len(dist) < topology.num_qubits else max(dist.values()))
    return longest


def max_ops(circuit: Circuit, topology: Topology) -> int:
    """Most entries a routing's ``ops`` may have for this case: ``G * (2 * D + 1) + num_physical``.

    ``G`` = the circuit's two-qubit gates, ``D`` = :func:`diameter` of the graph. From any
    placement, ``D - 1`` SWAPs bring a gate's two qubits onto an edge, so every routing needs at
    most ``G * D`` ops; the limit allows twice the SWAPs (there and back around every gate) plus one
    SWAP per physical qubit, so no sensible router meets it, while a routing that pads ``ops`` with
    millions of no-op SWAPs is refused before anything is replayed or built (issue 40: 4,000,000
    no-op SWAPs kept the parent busy > 300 s at 1.26 GB). 4gt13_92 on q20: 30 x 9 + 20 = 290;
    9symml_195 on heron_fez: 15,232 x 65 + 156 = 990,236.
    """
    return len(two_qubit_gates(circuit)) * (2 * diameter(topology) + 1) + topology.num_qubits


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def check_layout(layout: Any, num_logical: int, num_physical: int) -> list[int]:
    """Check an initial layout: a list of ``num_logical`` distinct ints in ``[0, num_physical)``.

    Raises:
        InvalidSolution: wrong type or length, an index out of range, a physical qubit used twice.
    """
    if not isinstance(layout, list) or len(layout) != num_logical:
        raise InvalidSolution(f"layout must be a list of {num_logical} physical qubits, got "
                              f"{type(layout).__name__} of length {len(layout) if isinstance(layout, list) else '-'}")
    seen: dict[int, int] = {}
    for logical, p in enumerate(layout):
        if not _is_int(p) or not 0 <= p < num_physical:
            raise InvalidSolution(f"layout[{logical}] = {p!r} is not a physical qubit in [0, {num_physical})")
        if p in seen:
            raise InvalidSolution(f"layout puts logical qubits {seen[p]} and {logical} on physical qubit {p}")
        seen[p] = logical
    return list(layout)


def check_routing(circuit: Circuit, topology: Topology, result: Any) -> int:
    """Replay a routing gate by gate and return its number of SWAPs.

    Args:
        circuit: the input circuit.
        topology: the coupling graph.
        result: ``{"layout": [...], "ops": [...]}`` (module docstring).

    Returns:
        Number of SWAPs in ``ops`` (added CNOTs = :data:`CNOTS_PER_SWAP` x SWAPs).

    Raises:
        InvalidSolution: a malformed result; more than :func:`max_ops` ops (checked before the
            replay); a gate out of dependency order, executed twice, on a non-edge, or never
            executed (a dropped gate); a SWAP on a non-edge.
    """
    if not isinstance(result, dict) or "layout" not in result or "ops" not in result:
        raise InvalidSolution("route must return a dict with 'layout' and 'ops'")
    gates = two_qubit_gates(circuit)
    l2p = check_layout(result["layout"], circuit.num_qubits, topology.num_qubits)
    p2l = {p: q for q, p in enumerate(l2p)}
    ops = result["ops"]
    if not isinstance(ops, list):
        raise InvalidSolution(f"ops must be a list, got {type(ops).__name__}")
    limit = max_ops(circuit, topology)
    if len(ops) > limit:
        raise InvalidSolution(f"ops has {len(ops)} entries, more than this case's limit {limit} (= two-qubit gates "
                              f"{len(gates)} x (2 x graph diameter {diameter(topology)} + 1) + {topology.num_qubits} "
                              "physical qubits); refused before the replay")
    queues: list[list[int]] = [[] for _ in range(circuit.num_qubits)]
    for index, (a, b) in enumerate(gates):
        queues[a].append(index)
        queues[b].append(index)
    position = [0] * circuit.num_qubits
    done = [False] * len(gates)
    swaps = executed = 0
    edges = topology.edges
    for k, op in enumerate(ops):
        if _is_int(op):
            if not 0 <= op < len(gates):
                raise InvalidSolution(f"ops[{k}] = {op}: no two-qubit gate {op} (the circuit has {len(gates)})")
            if done[op]:
                raise InvalidSolution(f"ops[{k}]: gate {op} executed twice")
            a, b = gates[op]
            for q in (a, b):
                if position[q] >= len(queues[q]) or queues[q][position[q]] != op:
                    raise InvalidSolution(f"ops[{k}]: gate {op} on logical ({a}, {b}) runs before gate "
                                          f"{queues[q][position[q]]} on logical qubit {q} (dependency order)")
            pa, pb = l2p[a], l2p[b]
            if (min(pa, pb), max(pa, pb)) not in edges:
                raise InvalidSolution(f"ops[{k}]: gate {op} on logical ({a}, {b}) sits on physical ({pa}, {pb}), "
                                      "not a coupling edge")
            done[op] = True
            position[a] += 1
            position[b] += 1
            executed += 1
        elif isinstance(op, list) and len(op) == 2 and all(_is_int(x) for x in op):
            p, q = op
            if (min(p, q), max(p, q)) not in edges:
                raise InvalidSolution(f"ops[{k}]: SWAP on physical ({p}, {q}), not a coupling edge")
            _swap(l2p, p2l, p, q)
            swaps += 1
        else:
            raise InvalidSolution(f"ops[{k}] = {op!r}: expected a gate index (int) or a SWAP [p, q]")
    if executed != len(gates):
        missing = next(i for i, d in enumerate(done) if not d)
        raise InvalidSolution(f"{len(gates) - executed} two-qubit gate(s) never executed (first: gate {missing} "
                              f"on logical {tuple(gates[missing])}): the routed circuit drops gates")
    return swaps


def routed_circuit(circuit: Circuit, topology: Topology, result: dict) -> tuple[Any, list[int]]:
    """The physical Qiskit circuit of a routing that :func:`check_routing` accepted.

    One-qubit gates are placed with their qubit: those before a qubit's first two-qubit gate at the
    start, the others right after the two-qubit gate they follow.

    Returns:
        ``(QuantumCircuit on topology.num_qubits qubits, final layout logical -> physical)``.

    Raises:
        BackendUnavailable: Qiskit is not installed (``pip install discoverygym[quantum]``).
    """
    qc_cls, gate_of = _qiskit()
    qc = qc_cls(topology.num_qubits)
    after: dict[tuple[int, int], list] = {}  # (logical, index of 2q gate or -1) -> 1q ops that follow it
    last = [-1] * circuit.num_qubits
    g = 0
    for name, params, qubits in circuit.ops:
        if len(qubits) == 1:
            after.setdefault((qubits[0], last[qubits[0]]), []).append((name, params))
        else:
            for q in qubits:
                last[q] = g
            g += 1
    l2p = list(result["layout"])
    p2l = {p: q for q, p in enumerate(l2p)}
    for q in range(circuit.num_qubits):
        for name, params in after.get((q, -1), ()):
            qc.append(gate_of(name, params), [l2p[q]])
    names = [name for name, _, qubits in circuit.ops if len(qubits) == 2]
    gates = two_qubit_gates(circuit)
    for op in result["ops"]:
        if isinstance(op, list):
            p, q = op
            qc.swap(p, q)
            _swap(l2p, p2l, p, q)
            continue
        a, b = gates[op]
        qc.append(gate_of(names[op], ()), [l2p[a], l2p[b]])
        for q in (a, b):
            for name, params in after.get((q, op), ()):
                qc.append(gate_of(name, params), [l2p[q]])
    return qc, l2p


def check_operator(circuit: Circuit, topology: Topology, result: dict) -> bool | None:
    """Unitary equivalence of a routing, where at most :data:`OPERATOR_MAX_QUBITS` physical qubits are touched.

    Compares ``Operator(routed)`` with ``P_final · Operator(input placed by the initial layout)`` on
    the touched physical qubits (those the layout gives a used logical qubit, and every qubit a gate
    or SWAP acts on). ``P_final`` follows every wire through the SWAPs, occupied or not: a SWAP of
    two qubits that hold no logical qubit permutes their states too, and is valid (it only costs).

    Call it on a routing :func:`check_routing` accepted (so ``ops`` is within :func:`max_ops`).

    Returns:
        ``True`` / ``False``, or ``None`` when too many qubits are touched to build the unitary
        (decided from the decisions before any Qiskit circuit is built).
    """
    from qiskit.circuit.library import PermutationGate
    from qiskit.quantum_info import Operator

    # the touched qubits follow from the decisions alone: decide before building any circuit
    l2p = list(result["layout"])
    p2l = {p: q for q, p in enumerate(l2p)}
    gates = two_qubit_gates(circuit)
    touched_set = {l2p[q] for _, _, qs in circuit.ops for q in qs}
    for op in result["ops"]:
        if isinstance(op, list):
            touched_set.update(op)
            _swap(l2p, p2l, *op)
        else:
            touched_set.update(l2p[q] for q in gates[op])
    if len(touched_set) > OPERATOR_MAX_QUBITS:
        return None
    routed, _ = routed_circuit(circuit, topology, result)
    touched = sorted(touched_set | {routed.find_bit(q).index for ins in routed.data for q in ins.qubits})
    if len(touched) > OPERATOR_MAX_QUBITS:
        return None
    wire = {p: i for i, p in enumerate(touched)}
    qc_cls, gate_of = _qiskit()
    small = qc_cls(len(touched))
    for ins in routed.data:
        small.append(ins.operation, [wire[routed.find_bit(q).index] for q in ins.qubits])
    expected = qc_cls(len(touched))
    for name, params, qubits in circuit.ops:
        expected.append(gate_of(name, params), [wire[result["layout"][q]] for q in qubits])
    # Every wire's state moves with the SWAPs, a logical qubit's or not: a SWAP of two unoccupied
    # qubits permutes their states as well (issue 40). holder[w] = wire whose start state is on w now.
    holder = list(range(topology.num_qubits))
    for op in result["ops"]:
        if isinstance(op, list):
            p, q = op
            holder[p], holder[q] = holder[q], holder[p]
    pattern = [0] * len(touched)  # the state starting on touched wire w ends on wire pattern[w]
    for w, start in enumerate(holder):
        if start != w:
            pattern[wire[start]] = wire[w]  # a moved wire was swapped, hence touched
        elif w in wire:
            pattern[wire[w]] = wire[w]
    inverse = [0] * len(pattern)
    for w, target in enumerate(pattern):
        inverse[target] = w
    expected.append(PermutationGate(inverse), list(range(len(touched))))
    return Operator(small).equiv(Operator(expected))


def to_qiskit(circuit: Circuit) -> Any:
    """The input circuit as a Qiskit ``QuantumCircuit`` (``circuit.num_qubits`` qubits, same gates in order).

    Raises:
        BackendUnavailable: Qiskit is not installed.
    """
    qc_cls, gate_of = _qiskit()
    qc = qc_cls(circuit.num_qubits)
    for name, params, qubits in circuit.ops:
        qc.append(gate_of(name, params), list(qubits))
    return qc


def from_qiskit(circuit: Circuit, routed: Any) -> dict:
    """Read a Qiskit-routed circuit (a layout + routing pass's output) as a routing ``{"layout", "ops"}``.

    Each two-qubit gate of ``routed`` is matched to the next gate of the logical qubit it acts on
    (the logical qubits are tracked through the SWAPs), so :func:`check_routing` then judges
    Qiskit's routing exactly as a candidate's. One-qubit gates are not read (routing does not move
    them between two-qubit gates).

    Args:
        circuit: the input circuit.
        routed: ``QuantumCircuit`` on physical qubits with ``routed.layout`` set (Qiskit's
            ``TranspileLayout``), e.g. ``PassManager([SabreLayout(cmap, ...)]).run(to_qiskit(c))``.

    Raises:
        InvalidSolution: a two-qubit gate of ``routed`` that matches no pending gate of the input
            (wrong qubits or control/target swapped), or a gate other than the input's and SWAP.
    """
    layout = list(routed.layout.initial_index_layout(filter_ancillas=True))[: circuit.num_qubits]
    l2p = list(layout)
    p2l = {p: q for q, p in enumerate(l2p)}
    gates = two_qubit_gates(circuit)
    queues: list[list[int]] = [[] for _ in range(circuit.num_qubits)]
    for index, (a, b) in enumerate(gates):
        queues[a].append(index)
        queues[b].append(index)
    position = [0] * circuit.num_qubits
    ops: list = []
    for k, ins in enumerate(routed.data):
        qubits = [routed.find_bit(q).index for q in ins.qubits]
        if len(qubits) != 2:
            continue
        p, q = qubits
        if ins.operation.name == "swap":
            ops.append([p, q])
            _swap(l2p, p2l, p, q)
            continue
        a, b = p2l.get(p), p2l.get(q)
        if a is None or position[a] >= len(queues[a]):
            raise InvalidSolution(f"routed op #{k} ({ins.operation.name} on {p}, {q}) matches no pending gate")
        g = queues[a][position[a]]
        if gates[g] != [a, b]:
            raise InvalidSolution(f"routed op #{k} on logical ({a}, {b}) is not the next gate {gates[g]} of qubit {a}")
        position[a] += 1
        position[b] += 1
        ops.append(g)
    return {"layout": layout, "ops": ops}


def _qiskit() -> tuple[Any, Any]:
    """(QuantumCircuit, gate factory by name and params).

    Raises:
        BackendUnavailable: Qiskit is not installed.
    """
    try:
        from qiskit import QuantumCircuit
        from qiskit.circuit.library import get_standard_gate_name_mapping
    except ImportError as exc:  # pragma: no cover - depends on the install
        from discoverygym.errors import BackendUnavailable

        raise BackendUnavailable("QubitRouting-v0 needs Qiskit: pip install 'discoverygym[quantum]'") from exc
    mapping = get_standard_gate_name_mapping()

    def gate_of(name: str, params: tuple[float, ...]) -> Any:
        gate = mapping[name]
        return gate.__class__(*params) if params else gate

    return QuantumCircuit, gate_of
