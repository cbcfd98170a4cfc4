"""Circuits of ``ZonedNeutralAtom-v0``: the OpenQASM 2 reader, the fixed scheduler and the reuse analyzer.

The pipeline of TES's "znaa" task is scheduler -> reuse analyzer -> *placer* -> router; only the
placer is the candidate. This module holds the two fixed stages before it (TES's rules, our code):

* :func:`schedule`: ASAP layering of the two-qubit gates (a gate goes one layer after the later of
  its two qubits' previous two-qubit gates); a layer of more than ``capacity`` gates (7 x 20 = 140,
  one per entangling pair) is cut, in gate order, into several stages. Each one-qubit gate rides with
  the previous two-qubit gate on its qubit: it runs right after that gate's pulse (before the first
  pulse when its qubit has had none).
* :func:`reuse_candidates`: ZAC's reuse analysis (Lin et al. 2025, "Reuse-aware compilation for
  zoned quantum architectures based on neutral atoms", HPCA, Sec. 4.2): between consecutive stages, a
  maximum bipartite matching of the gates of stage s to the gates of stage s+1 that share a qubit;
  each matched pair names the shared qubit, which may stay in the entangling zone (at most one
  qubit per gate on either side, so its new partner always finds the other site of its pair free).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Circuit", "Schedule", "parse_qasm2", "reuse_candidates", "schedule"]

_GATE = re.compile(r"^([a-z][a-z0-9_]*)\s*(?:\(([^)]*)\))?\s+(.+)$")
_QUBIT = re.compile(r"^q\[(\d+)\]$")


@dataclass(frozen=True)
class Circuit:
    """A circuit in the machine's gate set.

    Attributes:
        name: the suite's name for it (used in messages).
        num_qubits: qubits of the register ``q``.
        ops: gates in order: ``(q,)`` a one-qubit gate (any ``u``/``u1``/``u2``/``u3``), ``(a, b)`` a CZ.
    """

    name: str
    num_qubits: int
    ops: tuple[tuple[int, ...], ...]

    @property
    def n_2q(self) -> int:
        """Number of CZ gates."""
        return sum(len(o) == 2 for o in self.ops)


def parse_qasm2(text: str, name: str) -> Circuit:
    """Read the OpenQASM 2 subset of the suite: one ``qreg q[n];``, gates ``u``, ``u1``, ``u2``, ``u3``, ``cz``.

    Parameters of one-qubit gates are not kept (they do not change the machine's cost); ``creg``,
    ``barrier`` and ``measure`` lines are skipped.

    Raises:
        ValueError: another statement, gate or a bad qubit index (the message quotes the line).
    """
    n, ops = None, []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//")[0].strip()
        if not line or line.startswith(("OPENQASM", "include", "creg", "barrier", "measure")):
            continue
        if not line.endswith(";"):
            raise ValueError(f"{name} line {lineno}: expected ';' in {raw!r}")
        line = line[:-1].strip()
        m = re.fullmatch(r"qreg\s+q\[(\d+)\]", line)
        if m:
            if n is not None:
                raise ValueError(f"{name} line {lineno}: a second register in {raw!r}")
            n = int(m.group(1))
            continue
        m = _GATE.match(line)
        if not m or n is None:
            raise ValueError(f"{name} line {lineno}: unsupported statement {raw!r}")
        gate, args = m.group(1), [a.strip() for a in m.group(3).split(",")]
        qubits = []
        for arg in args:
            qm = _QUBIT.match(arg)
            if not qm or int(qm.group(1)) >= n:
                raise ValueError(f"{name} line {lineno}: bad qubit {arg!r} in {raw!r}")
            qubits.append(int(qm.group(1)))
        arity = 1 if gate in ("u", "u1", "u2", "u3") else 2 if gate == "cz" else None
        if arity != len(qubits) or len(set(qubits)) != len(qubits):
            raise ValueError(f"{name} line {lineno}: unsupported gate {raw!r} (the suite is u/u1/u2/u3 + cz)")
        ops.append(tuple(qubits))
    if n is None:
        raise ValueError(f"{name}: no 'qreg q[n];' declaration")
    return Circuit(name, n, tuple(ops))


@dataclass(frozen=True)
class Schedule:
    """The fixed scheduler's output for one circuit.

    Attributes:
        stages: per stage, its CZ gates as indices into ``circuit.ops``, in circuit order.
        riders: ``riders[s + 1]`` = one-qubit gates (op indices, in order) run right after stage
            ``s``'s pulse; ``riders[0]`` runs before the first pulse.
    """

    stages: tuple[tuple[int, ...], ...]
    riders: tuple[tuple[int, ...], ...]


def schedule(circuit: Circuit, capacity: int = 140) -> Schedule:
    """ASAP two-qubit stages of at most ``capacity`` gates, one-qubit gates riding along (module docstring).

    Raises:
        ValueError: ``capacity`` < 1.
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    level = [0] * circuit.num_qubits
    layers: list[list[int]] = []
    for i, op in enumerate(circuit.ops):
        if len(op) == 2:
            a, b = op
            layer = max(level[a], level[b])
            level[a] = level[b] = layer + 1
            while len(layers) <= layer:
                layers.append([])
            layers[layer].append(i)
    stages: list[tuple[int, ...]] = []
    stage_of: dict[int, int] = {}
    for layer in layers:
        for k in range(0, len(layer), capacity):
            chunk = tuple(layer[k:k + capacity])
            for i in chunk:
                stage_of[i] = len(stages)
            stages.append(chunk)
    riders: list[list[int]] = [[] for _ in range(len(stages) + 1)]
    last = [-1] * circuit.num_qubits  # stage of each qubit's previous CZ
    for i, op in enumerate(circuit.ops):
        if len(op) == 2:
            for q in op:
                last[q] = stage_of[i]
        else:
            riders[last[op[0]] + 1].append(i)
    return Schedule(tuple(stages), tuple(tuple(r) for r in riders))


def reuse_candidates(circuit: Circuit, sched: Schedule) -> list[list[int]]:
    """ZAC's reuse analysis: ``out[s]`` = qubits that may stay in the entangling zone from stage s to s+1.

    A maximum matching (augmenting paths, Kuhn's algorithm) of the bipartite graph whose edges join a
    gate of stage s and a gate of stage s+1 sharing a qubit; every matched edge contributes its shared
    qubit. Length ``len(stages) - 1`` (empty for fewer than two stages); each list sorted.
    """
    out: list[list[int]] = []
    for s in range(len(sched.stages) - 1):
        left, right = sched.stages[s], sched.stages[s + 1]
        gate_of: dict[int, int] = {}
        for j, i in enumerate(right):
            for q in circuit.ops[i]:
                gate_of[q] = j
        adj = [[(gate_of[q], q) for q in circuit.ops[i] if q in gate_of] for i in left]
        match_right: dict[int, tuple[int, int]] = {}  # right gate -> (left gate, shared qubit)

        def augment(u: int, seen: set[int], adj=adj, match_right=match_right) -> bool:
            for v, q in adj[u]:
                if v in seen:
                    continue
                seen.add(v)
                if v not in match_right or augment(match_right[v][0], seen):
                    match_right[v] = (u, q)
                    return True
            return False

        for u in range(len(left)):
            if adj[u]:
                augment(u, set())
        out.append(sorted(q for _, q in match_right.values()))
    return out
