"""Exact model of a zoned neutral-atom machine and the replay that verifies and costs a compiled circuit.

The machine is the one of TES's "znaa" task (SimpleTES ``datasets/znaa``, its ``config_test``; facts
only, restated in our own words and units):

* **Storage zone** (zone 0): ``100 x 100`` trap sites, ``3 µm`` apart. Site ``(0, r, c)`` sits at
  ``x = 3c``, ``y = 3r`` (µm).
* **Entangling zone** (zone 1): ``7`` rows ``10 µm`` apart, ``20`` column *pairs* ``12 µm`` apart, the two
  partners of a pair ``2 µm`` apart. Site ``(1, r, c)`` (``c`` in ``0..39``, pair ``c // 2``) sits at
  ``x = 12 (c // 2) + 2 (c % 2)``, ``y = 297 + 10 + 10 r``: the zone starts ``10 µm`` below the last storage
  row (our frame: one axis, no flipped rows; TES's row-flipped frames are a defect not copied).
* **Rydberg pulse**: every atom in the entangling zone interacts with every atom within ``2.0 µm``.
* **AOD**: a grid of column lines (x) and row lines (y). ``Open`` turns on lines over one zone and picks
  up every atom at an intersection; ``Move`` shifts the lines (they never cross: order kept, and
  lines on one coordinate stay together); ``Close`` drops the carried atoms on trap sites. Lines are
  at least ``2.0 µm`` apart after ``Open`` and after ``Move``.

Costs (same source): one-qubit gate ``0.625 µs`` each, serialised; two-qubit pulse ``0.36 µs``; each
AOD open or close ``15 µs``; a move ``sqrt(D / 0.00275) µs`` for the largest displacement ``D`` (µm) of
the atoms it carries. Fidelities: one-qubit ``0.9997``, two-qubit ``0.995``, atom transfer ``0.999``
(two transfers per carried atom and batch: the pick-up at ``Open`` and the drop at ``Close``, as in
ZAC, Lin et al. 2025, Sec. 2); coherence time ``1e8 µs`` in storage and ``1.5e6 µs`` elsewhere (the
entangling zone and the AOD).

:func:`replay` runs a compiled program (:class:`Instruction` records) on this machine, checks every
rule by name (:data:`RULES`; a broken one raises :class:`~discoverygym.errors.InvalidSolution` whose
message names the rule, the circuit, the stage and the qubit) and returns the machine time and the
fidelity term ``F = -ln(f1^N1 f2^N2 ftr^Ntr prod_q exp(-(tS_q / 1e8 + tE_q / 1.5e6)))``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from discoverygym.errors import InvalidSolution

__all__ = ["MACHINE", "RULES", "Instruction", "Machine", "Program", "Replay", "fail", "replay"]

#: every rule the verifiers check, name -> what it demands (placement rules in rewards/znaa.py).
RULES: dict[str, str] = {
    "site-range": "every site is (zone, row, col) of ints inside its zone",
    "initial-storage": "the initial placement has every qubit in the storage zone",
    "group-count": "one group of 1 to MAX_SNAPSHOTS full snapshots per non-empty two-qubit stage",
    "no-overlap": "no two qubits on one site in a snapshot",
    "no-land-on-vacated": "a moving qubit never lands where another qubit stood in the previous snapshot",
    "gate-zone": "in the first snapshot of a stage, exactly the stage's gate qubits are in the entangling zone",
    "gate-pairs": "the two qubits of each gate are partners of one pair (same row, same pair, |Δcol| = 1)",
    "final-storage": "every qubit is back in the storage zone at the end",
    "aod-one-zone": "an AOD batch picks up in one zone and drops in one zone",
    "aod-spacing": "AOD lines are at least 2.0 µm apart after Open and after Move",
    "aod-order": "AOD lines keep their order when they move (no crossing, no merging)",
    "aod-stray-pickup": "an Open picks up exactly the atoms the batch names (no atom at another line crossing)",
    "aod-drop": "Close drops every carried atom on an empty trap site of the batch's destination zone",
    "pulse-pairs": "a pulse pairs every atom of the entangling zone with exactly one atom within 2.0 µm",
    "gate-order": "gates run in dependency order, each two-qubit gate by a pulse on its own pair",
    "all-gates": "every gate of the circuit runs exactly once",
}


def fail(rule: str, circuit: str, stage: int | str | None, qubit: int | None, detail: str) -> InvalidSolution:
    """The :class:`InvalidSolution` of a broken rule: ``"circuit C, stage S, qubit Q: RULE: detail"``.

    Args:
        rule: a key of :data:`RULES`.
        circuit: the circuit's name.
        stage: the two-qubit stage index (``None`` when the rule is not about one stage, ``"end"``
            after the last stage).
        qubit: the qubit concerned (``None`` when no single qubit is).
        detail: what was seen.

    Raises:
        KeyError: an unknown rule name (a bug in the caller).
    """
    if rule not in RULES:
        raise KeyError(f"unknown rule {rule!r}")
    where = [f"circuit {circuit}"]
    if stage is not None:
        where.append(f"stage {stage}")
    if qubit is not None:
        where.append(f"qubit {qubit}")
    exc = InvalidSolution(f"{', '.join(where)}: {rule}: {detail}")
    exc.metrics = {"rule": rule, "circuit": circuit, "stage": stage, "qubit": qubit}
    return exc


@dataclass(frozen=True)
class Machine:
    """Geometry, timings and fidelities of the zoned machine (defaults: TES ``config_test``; µm, µs).

    Attributes:
        storage_rows, storage_cols: storage zone size (sites).
        storage_pitch: distance between neighbouring storage sites.
        entangling_rows, entangling_pairs: entangling zone size (rows, column pairs; 2 sites a pair).
        row_pitch: distance between entangling rows.
        pair_pitch: distance between neighbouring pairs (left site to left site).
        partner_gap: distance between the two sites of a pair.
        zone_gap: distance from the last storage row to the first entangling row.
        rydberg_radius: atoms this close interact in a pulse.
        aod_min_spacing: smallest distance between two AOD lines.
        t_1q, t_2q, t_open_close: one-qubit gate, pulse, AOD open (or close) durations.
        move_constant: a move of largest displacement D takes ``sqrt(D / move_constant)``.
        f_1q, f_2q, f_transfer: gate and transfer fidelities.
        t2_storage, t2_elsewhere: coherence times in storage and elsewhere.
    """

    storage_rows: int = 100
    storage_cols: int = 100
    storage_pitch: int = 3
    entangling_rows: int = 7
    entangling_pairs: int = 20
    row_pitch: int = 10
    pair_pitch: int = 12
    partner_gap: int = 2
    zone_gap: int = 10
    rydberg_radius: float = 2.0
    aod_min_spacing: float = 2.0
    t_1q: float = 0.625
    t_2q: float = 0.36
    t_open_close: float = 15.0
    move_constant: float = 0.00275
    f_1q: float = 0.9997
    f_2q: float = 0.995
    f_transfer: float = 0.999
    t2_storage: float = 1e8
    t2_elsewhere: float = 1.5e6

    @property
    def entangling_cols(self) -> int:
        """Sites per entangling row (two per pair)."""
        return 2 * self.entangling_pairs

    @property
    def stage_capacity(self) -> int:
        """Gates one pulse can run: one per pair of the entangling zone (7 x 20 = 140)."""
        return self.entangling_rows * self.entangling_pairs

    @property
    def entangling_y0(self) -> int:
        """y of the first entangling row (µm)."""
        return (self.storage_rows - 1) * self.storage_pitch + self.zone_gap

    def valid_site(self, site: Any) -> bool:
        """Whether ``site`` is a ``(zone, row, col)`` tuple of ints naming a site of this machine."""
        if not isinstance(site, tuple) or len(site) != 3 or not all(type(v) is int for v in site):
            return False
        zone, row, col = site
        if zone == 0:
            return 0 <= row < self.storage_rows and 0 <= col < self.storage_cols
        if zone == 1:
            return 0 <= row < self.entangling_rows and 0 <= col < self.entangling_cols
        return False

    def position(self, site: tuple[int, int, int]) -> tuple[int, int]:
        """``(x, y)`` of a valid site, integer µm (module docstring)."""
        zone, row, col = site
        if zone == 0:
            return col * self.storage_pitch, row * self.storage_pitch
        return (col // 2) * self.pair_pitch + (col % 2) * self.partner_gap, self.entangling_y0 + row * self.row_pitch

    def site_at(self, zone: int, x: float, y: float) -> tuple[int, int, int] | None:
        """The site of ``zone`` at exactly ``(x, y)``, or ``None``."""
        if zone == 0:
            if x % self.storage_pitch or y % self.storage_pitch:
                return None
            site = (0, int(y) // self.storage_pitch, int(x) // self.storage_pitch)
        elif zone == 1:
            dy = y - self.entangling_y0
            if dy % self.row_pitch:
                return None
            pair, rest = divmod(x, self.pair_pitch)
            if rest not in (0, self.partner_gap):
                return None
            site = (1, int(dy) // self.row_pitch, 2 * int(pair) + (1 if rest else 0))
        else:
            return None
        return site if self.valid_site(site) and self.position(site) == (x, y) else None

    def zone_of_y(self, y: float) -> int:
        """The zone whose rows span ``y`` (0 at or above the last storage row, else 1)."""
        return 0 if y <= (self.storage_rows - 1) * self.storage_pitch else 1

    def move_time(self, distance: float) -> float:
        """Duration of an AOD move whose largest displacement is ``distance`` µm."""
        return math.sqrt(distance / self.move_constant) if distance > 0 else 0.0

    def describe(self) -> dict:
        """The machine as plain data (what a placer receives as ``arch``)."""
        return {
            "storage_rows": self.storage_rows, "storage_cols": self.storage_cols,
            "storage_pitch_um": self.storage_pitch, "entangling_rows": self.entangling_rows,
            "entangling_pairs": self.entangling_pairs, "entangling_cols": self.entangling_cols,
            "row_pitch_um": self.row_pitch, "pair_pitch_um": self.pair_pitch, "partner_gap_um": self.partner_gap,
            "zone_gap_um": self.zone_gap, "entangling_y0_um": self.entangling_y0,
            "rydberg_radius_um": self.rydberg_radius, "aod_min_spacing_um": self.aod_min_spacing,
            "t_1q_us": self.t_1q, "t_2q_us": self.t_2q, "t_open_close_us": self.t_open_close,
            "move_constant": self.move_constant, "f_1q": self.f_1q, "f_2q": self.f_2q,
            "f_transfer": self.f_transfer, "t2_storage_us": self.t2_storage, "t2_elsewhere_us": self.t2_elsewhere,
        }


#: the machine of TES's ``config_test``.
MACHINE = Machine()


@dataclass(frozen=True)
class Instruction:
    """One step of a compiled program.

    ``kind`` and its fields:

    * ``"1q"``: ``gate`` = index of a one-qubit gate in the circuit's op list.
    * ``"pulse"``: a Rydberg pulse (which atoms interact follows from their positions).
    * ``"open"``: ``zone``, ``xs`` / ``ys`` (AOD column / row coordinates, µm, increasing), ``qubits``
      (the atoms the batch means to carry).
    * ``"move"``: ``xs`` / ``ys``: where each open line goes (same lengths and order as at ``open``).
    * ``"close"``: ``zone``: the zone the carried atoms are dropped in.

    ``stage`` is the two-qubit stage the step belongs to (``-1`` before the first pulse).
    """

    kind: str
    stage: int
    gate: int | None = None
    zone: int | None = None
    xs: tuple[float, ...] = ()
    ys: tuple[float, ...] = ()
    qubits: tuple[int, ...] = ()


@dataclass(frozen=True)
class Program:
    """A circuit compiled for the machine: its gates, the initial sites and the instructions.

    Attributes:
        name: the circuit's name (used in messages).
        num_qubits: qubits (atoms) of the circuit.
        ops: the circuit's gates in order, ``(q,)`` for a one-qubit gate, ``(a, b)`` for a CZ.
        initial: ``initial[q]`` = site of atom ``q`` before the first instruction.
        instructions: the steps, in order.
    """

    name: str
    num_qubits: int
    ops: tuple[tuple[int, ...], ...]
    initial: tuple[tuple[int, int, int], ...]
    instructions: tuple[Instruction, ...]


@dataclass
class Replay:
    """What :func:`replay` measured.

    Attributes:
        time_us: machine time T (µs).
        fidelity_term: F (see the module docstring).
        n_1q, n_2q, n_transfers: gate and atom-transfer counts.
        n_batches: AOD batches (open-move-close).
        t_storage, t_elsewhere: per-qubit time in storage / elsewhere (µs).
    """

    time_us: float = 0.0
    fidelity_term: float = 0.0
    n_1q: int = 0
    n_2q: int = 0
    n_transfers: int = 0
    n_batches: int = 0
    t_storage: list[float] = field(default_factory=list)
    t_elsewhere: list[float] = field(default_factory=list)


def _lines_ok(values: tuple[float, ...], machine: Machine) -> bool:
    return all(b - a >= machine.aod_min_spacing for a, b in itertools.pairwise(values))


def replay(program: Program, machine: Machine = MACHINE) -> Replay:
    """Run ``program`` on ``machine``, checking every machine rule, and measure T and F.

    Returns:
        :class:`Replay`.

    Raises:
        InvalidSolution: a rule of :data:`RULES` broken (``aod-*``, ``pulse-pairs``, ``gate-order``,
            ``all-gates``, ``final-storage``, ``site-range``, ``no-overlap``), the message naming the
            circuit, stage and qubit.
    """
    name, n = program.name, program.num_qubits
    pos: list[tuple[int, int, int]] = list(program.initial)
    where: dict[tuple[int, int, int], int] = {}
    for q, site in enumerate(pos):
        if not machine.valid_site(site):
            raise fail("site-range", name, None, q, f"initial site {site} is not a site of the machine")
        if site in where:
            raise fail("no-overlap", name, None, q, f"initial site {site} also holds qubit {where[site]}")
        where[site] = q
    # per qubit: indices of its gates in order, and how many have run
    per_qubit: list[list[int]] = [[] for _ in range(n)]
    for i, qs in enumerate(program.ops):
        for q in qs:
            per_qubit[q].append(i)
    done_on = [0] * n
    done = [False] * len(program.ops)
    out = Replay(t_storage=[0.0] * n, t_elsewhere=[0.0] * n)
    carried: dict[int, tuple[int, int]] = {}  # qubit -> index of its (column line, row line)
    open_xs: tuple[float, ...] = ()
    open_ys: tuple[float, ...] = ()
    open_zone: int | None = None

    def advance(dt: float) -> None:
        out.time_us += dt
        for q in range(n):
            if q in carried or pos[q][0] != 0:
                out.t_elsewhere[q] += dt
            else:
                out.t_storage[q] += dt

    def run_gate(i: int, stage: int) -> None:
        qs = program.ops[i]
        for q in qs:
            if done_on[q] >= len(per_qubit[q]) or per_qubit[q][done_on[q]] != i:
                raise fail("gate-order", name, stage, q, f"gate {i} {qs} runs before the earlier gates on qubit {q}")
        for q in qs:
            done_on[q] += 1
        done[i] = True

    for ins in program.instructions:
        st = ins.stage
        if ins.kind == "1q":
            i = ins.gate
            if not isinstance(i, int) or not 0 <= i < len(program.ops) or len(program.ops[i]) != 1 or done[i]:
                raise fail("gate-order", name, st, None, f"instruction names gate {i!r}, not a pending one-qubit gate")
            if carried:
                raise fail("gate-order", name, st, program.ops[i][0], "one-qubit gate while the AOD carries atoms")
            run_gate(i, st)
            out.n_1q += 1
            advance(machine.t_1q)
        elif ins.kind == "pulse":
            if carried:
                raise fail("pulse-pairs", name, st, next(iter(carried)), "pulse while the AOD carries atoms")
            atoms = [q for q in range(n) if pos[q][0] == 1]
            xy = {q: machine.position(pos[q]) for q in atoms}
            cell = max(machine.rydberg_radius, 1e-9)  # buckets of the radius: neighbours lie in the 3 x 3 block
            buckets: dict[tuple[int, int], list[int]] = {}
            for q in atoms:
                buckets.setdefault((int(xy[q][0] // cell), int(xy[q][1] // cell)), []).append(q)
            partner: dict[int, int] = {}
            for q in atoms:
                bx, by = int(xy[q][0] // cell), int(xy[q][1] // cell)
                near = [p for dx in (-1, 0, 1) for dy in (-1, 0, 1) for p in buckets.get((bx + dx, by + dy), ())
                        if p != q and math.dist(xy[q], xy[p]) <= machine.rydberg_radius]
                if len(near) != 1:
                    what = "no atom" if not near else f"{len(near)} atoms {near}"
                    raise fail("pulse-pairs", name, st, q, f"at {pos[q]} it has {what} within "
                               f"{machine.rydberg_radius} µm during the pulse (exactly one partner required)")
                partner[q] = near[0]
            for q in sorted(atoms):
                p = partner[q]
                if q < p:
                    pending = per_qubit[q][done_on[q]:done_on[q] + 1]
                    if not pending or program.ops[pending[0]] not in ((q, p), (p, q)):
                        raise fail("gate-order", name, st, q, f"pulse pairs qubits {q} and {p}, but the next "
                                   f"gate of qubit {q} is not a CZ on them")
                    run_gate(pending[0], st)
                    out.n_2q += 1
            advance(machine.t_2q)
        elif ins.kind == "open":
            if carried or open_zone is not None:
                raise fail("aod-order", name, st, None, "Open while the AOD is already open")
            if ins.zone not in (0, 1):
                raise fail("aod-one-zone", name, st, None, f"Open in zone {ins.zone!r}")
            xs, ys = tuple(ins.xs), tuple(ins.ys)
            if not xs or not ys or list(xs) != sorted(xs) or list(ys) != sorted(ys):
                raise fail("aod-order", name, st, None, "Open lines must be given in increasing order")
            if not _lines_ok(xs, machine) or not _lines_ok(ys, machine):
                raise fail("aod-spacing", name, st, None, f"Open lines closer than {machine.aod_min_spacing} µm: "
                           f"columns {list(xs)}, rows {list(ys)}")
            if any(machine.zone_of_y(y) != ins.zone for y in ys):
                raise fail("aod-one-zone", name, st, None, f"Open in zone {ins.zone} has row lines {list(ys)} "
                           "outside that zone")
            col = {x: i for i, x in enumerate(xs)}
            row = {y: i for i, y in enumerate(ys)}
            picked = {}
            for q in range(n):
                x, y = machine.position(pos[q])
                if x in col and y in row:
                    picked[q] = (col[x], row[y])
            meant = set(ins.qubits)
            stray = sorted(set(picked) - meant)
            if stray:
                q = stray[0]
                raise fail("aod-stray-pickup", name, st, q, f"qubit {q} at {pos[q]} sits on a crossing of the open "
                           "lines and is picked up though the batch does not name it")
            missing = sorted(meant - set(picked))
            if missing:
                q = missing[0]
                raise fail("aod-stray-pickup", name, st, q, f"the batch names qubit {q} at {pos[q]}, "
                           "which is on no crossing of the open lines")
            carried, open_xs, open_ys, open_zone = picked, xs, ys, ins.zone
            for q in carried:
                del where[pos[q]]
            out.n_transfers += len(carried)
            advance(machine.t_open_close)
        elif ins.kind == "move":
            if open_zone is None:
                raise fail("aod-order", name, st, None, "Move without an open AOD")
            xs, ys = tuple(ins.xs), tuple(ins.ys)
            if len(xs) != len(open_xs) or len(ys) != len(open_ys):
                raise fail("aod-order", name, st, None, "Move must give a new place for every open line")
            if list(xs) != sorted(set(xs)) or list(ys) != sorted(set(ys)):
                raise fail("aod-order", name, st, None, f"Move crosses or merges lines: columns {list(open_xs)} -> "
                           f"{list(xs)}, rows {list(open_ys)} -> {list(ys)}")
            if not _lines_ok(xs, machine) or not _lines_ok(ys, machine):
                raise fail("aod-spacing", name, st, None, f"after Move lines are closer than "
                           f"{machine.aod_min_spacing} µm: columns {list(xs)}, rows {list(ys)}")
            far = 0.0
            for ci, ri in carried.values():
                far = max(far, math.dist((open_xs[ci], open_ys[ri]), (xs[ci], ys[ri])))
            open_xs, open_ys = xs, ys
            advance(machine.move_time(far))
        elif ins.kind == "close":
            if open_zone is None:
                raise fail("aod-order", name, st, None, "Close without an open AOD")
            if ins.zone not in (0, 1):
                raise fail("aod-one-zone", name, st, None, f"Close in zone {ins.zone!r}")
            for q in sorted(carried):
                ci, ri = carried[q]
                x, y = open_xs[ci], open_ys[ri]
                site = machine.site_at(ins.zone, x, y)
                if site is None:
                    raise fail("aod-drop", name, st, q, f"dropped at ({x}, {y}) µm, not a site of zone {ins.zone}")
                if site in where:
                    raise fail("aod-drop", name, st, q, f"dropped on {site}, which holds qubit {where[site]}")
                where[site] = q
                pos[q] = site
            out.n_transfers += len(carried)
            out.n_batches += 1
            advance(machine.t_open_close)
            carried, open_zone = {}, None
        else:
            raise fail("gate-order", name, st, None, f"unknown instruction {ins.kind!r}")
    if open_zone is not None:
        raise fail("aod-drop", name, "end", next(iter(carried), None), "the program ends with the AOD open")
    left = [i for i, d in enumerate(done) if not d]
    if left:
        i = left[0]
        raise fail("all-gates", name, "end", program.ops[i][0], f"{len(left)} gates never ran, first gate {i} "
                   f"on qubits {program.ops[i]}")
    away = [q for q in range(n) if pos[q][0] != 0]
    if away:
        raise fail("final-storage", name, "end", away[0], f"ends at {pos[away[0]]}, outside the storage zone")
    log_f = (out.n_1q * math.log(machine.f_1q) + out.n_2q * math.log(machine.f_2q)
             + out.n_transfers * math.log(machine.f_transfer))
    idle = sum(ts / machine.t2_storage + te / machine.t2_elsewhere
               for ts, te in zip(out.t_storage, out.t_elsewhere))
    out.fidelity_term = -log_f + idle
    return out
