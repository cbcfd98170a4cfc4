"""Verifier and scorer of ``ZonedNeutralAtom-v0``: placement rules, the fixed router, T, F and the score.

A *placement* is what a candidate placer returns for one circuit (TES's ``place`` output, as data)::

    {"initial": [site of qubit 0, 1, ...],           # every qubit in storage
     "stages": [[snapshot, snapshot, ...], ...]}     # one group per two-qubit stage

A site is ``[zone, row, col]`` (zone 0 storage, 1 entangling; :mod:`~discoverygym.rewards.znaa_machine`
gives the geometry); a snapshot lists the site of every qubit. The first snapshot of a group is
where the stage's pulse runs; later ones (at most :data:`MAX_SNAPSHOTS` in all) are layouts the
atoms pass through before the next stage (e.g. back to storage).

:func:`check_placement` checks the placement rules by name (``site-range``, ``initial-storage``,
``group-count``, ``no-overlap``, ``no-land-on-vacated``, ``gate-zone``, ``gate-pairs``,
``final-storage``). :func:`route` is the fixed router (TES's rules, our code): between two snapshots it
packs the moving atoms into AOD batches greedily, first fit in (row, column) order of their current
sites, a batch taking an atom when every pair of its atoms keeps its order (strict order stays
strict, equal coordinates stay equal, in x and y), all come from one zone and go to one zone, and
no other atom sits on a crossing of the batch's lines; each batch is emitted as Open / Move /
Close. :func:`compile_program` interleaves the batches with the pulses and one-qubit gates, and
:func:`~discoverygym.rewards.znaa_machine.replay` checks the machine rules and measures T and F.

Score of one circuit (TES): ``s = 1/2 [ln(T_base / T) + ln(F_base / F)]`` with the baseline's T and F
(our ZAC-style initial placer through this same machine); a suite's score is ``sum w s / sum w``
with ``w = ln(number of qubits)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from discoverygym.rewards.znaa_circuit import Circuit, Schedule, reuse_candidates, schedule
from discoverygym.rewards.znaa_machine import MACHINE, Instruction, Machine, Program, Replay, fail, replay

__all__ = ["MAX_SNAPSHOTS", "CircuitResult", "check_placement", "circuit_score", "compile_program",
           "evaluate_placement", "max_result_size", "placer_inputs", "route", "suite_score"]

#: most snapshots in one stage's group (keeps every valid score finite and bounded).
MAX_SNAPSHOTS = 8

Site = tuple[int, int, int]


def placer_inputs(circuit: Circuit, machine: Machine = MACHINE) -> tuple[Schedule, dict]:
    """The schedule and the keyword arguments a placer receives for ``circuit``.

    Keywords: ``num_qubits``; ``stages`` (per stage, its gates as ``[a, b]``); ``reuse`` (per stage
    boundary s -> s+1, qubits that may stay in the entangling zone, ZAC's matching); ``arch``
    (:meth:`Machine.describe`).
    """
    sched = schedule(circuit, machine.stage_capacity)
    stages = [[list(circuit.ops[i]) for i in st] for st in sched.stages]
    kwargs = {"num_qubits": circuit.num_qubits, "stages": stages,
              "reuse": reuse_candidates(circuit, sched), "arch": machine.describe()}
    return sched, kwargs


def max_result_size(num_qubits: int, num_stages: int) -> tuple[int, int]:
    """``(values, bytes)``: the most a valid placement of ``num_qubits`` qubits over ``num_stages``
    stages can hold, with room to spare; the sandbox refuses a larger result before the parent parses
    it (``SandboxLimits.result_values`` / ``result_bytes``), as QubitRouting does (issue 52, #10).

    A valid result is ``{"initial": S0, "stages": G}``: S0 and every snapshot list one site
    ``[zone, row, col]`` per qubit (4 JSON values: the list and three ints of at most 3 digits),
    and G holds one group of at most :data:`MAX_SNAPSHOTS` snapshots per stage. Values are counted
    as the sandbox counts them (commas and opening brackets, an upper bound); bytes allow 24 per
    value (``[0, 99, 99], `` is 13).

    Example:
        >>> max_result_size(2, 1)[0] >= 1 + (1 + 4 * 2) + 1 + 1 + 8 * (1 + 4 * 2)
        True
    """
    snapshot = 1 + 4 * num_qubits
    values = 4 + snapshot + num_stages * (1 + MAX_SNAPSHOTS * snapshot) + 64
    return values, 24 * values + 65_536


def _site(value: Any, machine: Machine) -> Site | None:
    if isinstance(value, (list, tuple)) and len(value) == 3 and all(type(v) is int for v in value):
        site = (value[0], value[1], value[2])
        return site if machine.valid_site(site) else None
    return None


def _snapshot(value: Any, n: int, name: str, stage: int | None, what: str, machine: Machine) -> list[Site]:
    if not isinstance(value, (list, tuple)) or len(value) != n:
        size = len(value) if isinstance(value, (list, tuple)) else type(value).__name__
        raise fail("site-range", name, stage, None, f"{what} must list a site for each of the {n} qubits, got {size}")
    sites = []
    seen: dict[Site, int] = {}
    for q, v in enumerate(value):
        site = _site(v, machine)
        if site is None:
            raise fail("site-range", name, stage, q, f"{what}: {v!r} is not a site [zone, row, col] of the machine "
                       f"(storage {machine.storage_rows} x {machine.storage_cols}, entangling "
                       f"{machine.entangling_rows} x {machine.entangling_cols})")
        if site in seen:
            raise fail("no-overlap", name, stage, q, f"{what}: site {list(site)} also holds qubit {seen[site]}")
        seen[site] = q
        sites.append(site)
    return sites


def check_placement(circuit: Circuit, sched: Schedule, result: Any,
                    machine: Machine = MACHINE) -> tuple[list[Site], list[list[list[Site]]]]:
    """Check a placer's result against the placement rules.

    Returns:
        ``(initial, groups)`` as tuples of ints.

    Raises:
        InvalidSolution: a broken rule, the message naming rule, circuit, stage and qubit.
    """
    name, n = circuit.name, circuit.num_qubits
    if not isinstance(result, dict) or set(result) != {"initial", "stages"}:
        keys = sorted(result) if isinstance(result, dict) else type(result).__name__
        raise fail("group-count", name, None, None, "place must return {'initial': [...], 'stages': [...]} and "
                   f"nothing else, got {keys}")
    initial = _snapshot(result["initial"], n, name, None, "initial placement", machine)
    for q, site in enumerate(initial):
        if site[0] != 0:
            raise fail("initial-storage", name, None, q, f"starts at {list(site)}, outside the storage zone")
    groups_in = result["stages"]
    stages = sched.stages
    if not isinstance(groups_in, list) or len(groups_in) != len(stages):
        got = len(groups_in) if isinstance(groups_in, list) else type(groups_in).__name__
        raise fail("group-count", name, None, None, f"expected one group per two-qubit stage ({len(stages)}), got {got}")
    groups: list[list[list[Site]]] = []
    prev = initial
    for s, group in enumerate(groups_in):
        if not isinstance(group, list) or not 1 <= len(group) <= MAX_SNAPSHOTS:
            got = len(group) if isinstance(group, list) else type(group).__name__
            raise fail("group-count", name, s, None, f"a group holds 1 to {MAX_SNAPSHOTS} snapshots, got {got}")
        snaps = []
        for k, raw in enumerate(group):
            snap = _snapshot(raw, n, name, s, f"snapshot {k}", machine)
            stood = {site: q for q, site in enumerate(prev)}
            for q, site in enumerate(snap):
                if site != prev[q] and site in stood:
                    raise fail("no-land-on-vacated", name, s, q, f"snapshot {k}: moves to {list(site)}, where qubit "
                               f"{stood[site]} stood in the previous snapshot")
            if k == 0:
                _check_gate_snapshot(circuit, stages[s], snap, s, machine)
            snaps.append(snap)
            prev = snap
        groups.append(snaps)
    for q, site in enumerate(prev):
        if site[0] != 0:
            raise fail("final-storage", name, "end", q, f"ends at {list(site)}, outside the storage zone")
    return initial, groups


def _check_gate_snapshot(circuit: Circuit, gates: Sequence[int], snap: list[Site], s: int, machine: Machine) -> None:
    name = circuit.name
    gate_qubits = {q for i in gates for q in circuit.ops[i]}
    for q, site in enumerate(snap):
        if (site[0] == 1) != (q in gate_qubits):
            what = "is in the entangling zone but has no gate" if site[0] == 1 else "has a gate but is in storage"
            raise fail("gate-zone", name, s, q, f"at the pulse it {what} ({list(site)})")
    for i in gates:
        a, b = circuit.ops[i]
        (_, ra, ca), (_, rb, cb) = snap[a], snap[b]
        if not (ra == rb and ca // 2 == cb // 2 and abs(ca - cb) == 1):
            raise fail("gate-pairs", name, s, a, f"CZ({a}, {b}) has its qubits at {list(snap[a])} and {list(snap[b])}, "
                       "not the two sites of one pair (same row, same pair, |Δcol| = 1)")
    del machine


def route(prev: Sequence[Site], nxt: Sequence[Site], stage: int, machine: Machine = MACHINE) -> list[Instruction]:
    """The fixed router: AOD batches that take every atom from ``prev`` to ``nxt`` (module docstring).

    ``prev``/``nxt`` are full snapshots that passed :func:`check_placement` (a moving atom never lands
    where an atom stood, so every drop site is free). Returns Open/Move/Close instructions.
    """
    pos = list(prev)
    at: dict[tuple[int, int], int] = {machine.position(s): q for q, s in enumerate(pos)}
    todo = [q for q in range(len(pos)) if pos[q] != nxt[q]]
    todo.sort(key=lambda q: (pos[q][0], nxt[q][0], machine.position(pos[q])[1], machine.position(pos[q])[0]))
    out: list[Instruction] = []
    while todo:
        batch: list[int] = []
        cols: set[float] = set()
        rows: set[float] = set()
        rest = []
        for q in todo:
            if _fits(q, batch, cols, rows, pos, nxt, at, machine):
                batch.append(q)
                sx, sy = machine.position(pos[q])
                cols.add(sx)
                rows.add(sy)
            else:
                rest.append(q)
        src = {machine.position(pos[q]) for q in batch}
        dst = {q: machine.position(nxt[q]) for q in batch}
        xs = sorted(cols)
        ys = sorted(rows)
        new_x = {machine.position(pos[q])[0]: dst[q][0] for q in batch}
        new_y = {machine.position(pos[q])[1]: dst[q][1] for q in batch}
        out.append(Instruction("open", stage, zone=pos[batch[0]][0], xs=tuple(xs), ys=tuple(ys),
                               qubits=tuple(sorted(batch))))
        out.append(Instruction("move", stage, xs=tuple(new_x[x] for x in xs), ys=tuple(new_y[y] for y in ys)))
        out.append(Instruction("close", stage, zone=nxt[batch[0]][0]))
        for xy in src:
            del at[xy]
        for q in batch:
            at[dst[q]] = q
            pos[q] = nxt[q]
        todo = rest
    return out


def _fits(q: int, batch: list[int], cols: set, rows: set, pos: list, nxt: Sequence[Site],
          at: dict, machine: Machine) -> bool:
    """Whether atom ``q`` can join ``batch`` (same zones, order kept, spacing, no stray atom picked)."""
    sx, sy = machine.position(pos[q])
    dx, dy = machine.position(nxt[q])
    if batch:
        first = batch[0]
        if pos[first][0] != pos[q][0] or nxt[first][0] != nxt[q][0]:
            return False
    for b in batch:
        bx, by = machine.position(pos[b])
        ex, ey = machine.position(nxt[b])
        for s1, s2, d1, d2 in ((sx, bx, dx, ex), (sy, by, dy, ey)):
            if (s1 > s2) - (s1 < s2) != (d1 > d2) - (d1 < d2):
                return False
            if s1 != s2 and (abs(s1 - s2) < machine.aod_min_spacing or abs(d1 - d2) < machine.aod_min_spacing):
                return False
    members = set(batch) | {q}
    new_cols = cols | {sx}
    new_rows = rows | {sy}
    crossings = [(sx, y) for y in new_rows] + [(x, sy) for x in new_cols]
    return all(at.get(xy, q) in members for xy in crossings)


def compile_program(circuit: Circuit, sched: Schedule, initial: list[Site], groups: list[list[list[Site]]],
                    machine: Machine = MACHINE) -> Program:
    """The machine program of a checked placement: riders, then per stage route -> pulse -> riders -> routes."""
    ins: list[Instruction] = [Instruction("1q", -1, gate=i) for i in sched.riders[0]]
    prev = initial
    for s, group in enumerate(groups):
        ins += route(prev, group[0], s, machine)
        ins.append(Instruction("pulse", s))
        ins += [Instruction("1q", s, gate=i) for i in sched.riders[s + 1]]
        prev = group[0]
        for snap in group[1:]:
            ins += route(prev, snap, s, machine)
            prev = snap
    return Program(circuit.name, circuit.num_qubits, circuit.ops, tuple(initial), tuple(ins))


@dataclass(frozen=True)
class CircuitResult:
    """One circuit judged: machine time T (µs), fidelity term F, counts."""

    name: str
    num_qubits: int
    time_us: float
    fidelity_term: float
    n_batches: int
    n_transfers: int
    n_stages: int


def evaluate_placement(circuit: Circuit, sched: Schedule, result: Any, machine: Machine = MACHINE) -> CircuitResult:
    """Check a placer's result, route it, replay it on the machine and measure T and F.

    Raises:
        InvalidSolution: a placement or machine rule broken (message: rule, circuit, stage, qubit).
    """
    initial, groups = check_placement(circuit, sched, result, machine)
    program = compile_program(circuit, sched, initial, groups, machine)
    rep: Replay = replay(program, machine)
    return CircuitResult(circuit.name, circuit.num_qubits, rep.time_us, rep.fidelity_term, rep.n_batches,
                         rep.n_transfers, len(sched.stages))


def circuit_score(time_us: float, fidelity_term: float, base_time_us: float, base_fidelity_term: float) -> float:
    """TES's per-circuit score ``1/2 [ln(T_base / T) + ln(F_base / F)]`` (0 = as good as the baseline).

    Raises:
        ValueError: a non-positive time or fidelity term.
    """
    values = (time_us, fidelity_term, base_time_us, base_fidelity_term)
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"times and fidelity terms must be positive and finite, got {values}")
    return 0.5 * (math.log(base_time_us / time_us) + math.log(base_fidelity_term / fidelity_term))


def suite_score(scores: Sequence[float], num_qubits: Sequence[int]) -> float:
    """TES's suite score ``sum w s / sum w`` with ``w = ln(num_qubits)``.

    Raises:
        ValueError: empty or mismatched inputs, or a circuit of fewer than 2 qubits (weight 0).
    """
    if not scores or len(scores) != len(num_qubits):
        raise ValueError("suite_score needs one qubit count per score, and at least one")
    if min(num_qubits) < 2:
        raise ValueError("every circuit needs at least 2 qubits (weight ln n)")
    weights = [math.log(n) for n in num_qubits]
    return sum(w * s for w, s in zip(weights, scores)) / sum(weights)
