"""ZonedNeutralAtom-v0: our ZAC-style initial placer against mqt.qmap's zoned compilers, on our machine.

    pip install -e ".[znaa]"          # mqt.qmap (MIT); optional, never needed by the package
    python benchmarks/znaa.py [--circuits ghz_n20 qft_n10 ...]

For each circuit of the suite, mqt.qmap 3.11's ``RoutingAgnosticCompiler`` (the ZAC method, Lin et al.
2025) and ``RoutingAwareCompiler`` (Stade et al. 2025) compile it for an architecture JSON written here
with our machine's numbers (storage 100 x 100 at 3 µm from (0, 0); entangling 7 x 20 pairs at 12 x 10 µm
from (0, 307), partners 2 µm apart; TES durations and fidelities). qmap's ``stats()`` carries no time or
fidelity estimate and its router follows its own (relaxed) AOD model, so its *placement* is mapped into
our machine instead: the atoms' positions at each ``cz`` and after each ``store`` of its ``.naviz``
output become a placement (gate snapshot, then the layouts before the next pulse), which our fixed
router and exact replay judge exactly as they judge a candidate placer. A circuit whose qmap output
does not fit our rules (other stages, a position that is no site) is reported as such, with the rule.
Where the mapping fails, the cell gives qmap's own schedule timed with TES's constants
(:func:`naviz_cost`, marked ``*``: not a valid program of our machine, so not comparable as a score)
and the first of our rules it breaks. Score columns: TES's per-circuit score against our baseline
(0 = our initial placer).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import re
import sys
import time
from importlib import resources

from discoverygym.envs.znaa import _baseline, _circuit, suite_names
from discoverygym.errors import InvalidSolution
from discoverygym.rewards import znaa
from discoverygym.rewards.znaa_machine import MACHINE

ARCH = {
    "name": "discoverygym_znaa",
    "operation_duration": {"rydberg_gate": MACHINE.t_2q, "single_qubit_gate": MACHINE.t_1q,
                           "atom_transfer": MACHINE.t_open_close},
    "operation_fidelity": {"rydberg_gate": MACHINE.f_2q, "single_qubit_gate": MACHINE.f_1q,
                           "atom_transfer": MACHINE.f_transfer},
    "qubit_spec": {"T": MACHINE.t2_elsewhere},
    "storage_zones": [{"zone_id": 0, "slms": [{"id": 0, "site_separation": [3, 3], "r": 100, "c": 100,
                                               "location": [0, 0]}], "offset": [0, 0], "dimension": [300, 300]}],
    "entanglement_zones": [{"zone_id": 0, "slms": [
        {"id": 1, "site_separation": [12, 10], "r": 7, "c": 20, "location": [0, MACHINE.entangling_y0]},
        {"id": 2, "site_separation": [12, 10], "r": 7, "c": 20, "location": [2, MACHINE.entangling_y0]}],
        "offset": [0, MACHINE.entangling_y0], "dimension": [240, 70]}],
    "aods": [{"id": 0, "site_separation": 2, "r": 100, "c": 100}],
    "arch_range": [[-5, -5], [300, 380]],
    "rydberg_range": [[[-3, MACHINE.entangling_y0 - 2], [240, MACHINE.entangling_y0 + 65]]],
}

_ATOM = re.compile(r"^atom \(([-\d.]+), ([-\d.]+)\) atom(\d+)$")
_POS = re.compile(r"^\(([-\d.]+), ([-\d.]+)\) atom(\d+)$")


def naviz_placement(text: str, num_qubits: int) -> dict:
    """A placement (``{"initial", "stages"}``) read from qmap's ``.naviz`` output (module docstring).

    Raises:
        ValueError: a position that is no site of our machine.
    """
    pos: dict[int, tuple[float, float]] = {}
    snaps: list[tuple[str, dict]] = []  # ("cz" | "store", positions)
    block, pending = None, []
    for raw in text.splitlines():
        line = raw.strip()
        m = _ATOM.match(line)
        if m:
            pos[int(m.group(3))] = (float(m.group(1)), float(m.group(2)))
            continue
        if block is not None:
            if line == "]":
                if block == "move":
                    for x, y, q in pending:
                        pos[q] = (x, y)
                elif block == "store":
                    snaps.append(("store", dict(pos)))
                block, pending = None, []
                continue
            m = _POS.match(line)
            if m:
                pending.append((float(m.group(1)), float(m.group(2)), int(m.group(3))))
            continue
        m = re.match(r"^@\+ (load|move|store) \[$", line)
        if m:
            block = m.group(1)
        elif re.match(r"^@\+ cz\b", line):
            snaps.append(("cz", dict(pos)))

    def sites(p: dict) -> list[list[int]]:
        out = []
        for q in range(num_qubits):
            x, y = p[q]
            site = MACHINE.site_at(MACHINE.zone_of_y(y), x, y)
            if site is None:
                raise ValueError(f"qubit {q} at ({x}, {y}) µm is no site of our machine")
            out.append(list(site))
        return out

    initial = sites(pos if not snaps else _first_positions(text, num_qubits))
    groups: list[list[list[list[int]]]] = []
    for kind, p in snaps:
        s = sites(p)
        if kind == "cz":
            groups.append([s])
        elif groups and s != groups[-1][-1]:
            groups[-1].append(s)
    for g in groups:  # at most MAX_SNAPSHOTS: keep the pulse layout and the last ones
        del g[1:max(1, len(g) - znaa.MAX_SNAPSHOTS + 1)]
    return {"initial": initial, "stages": groups}


def naviz_cost(text: str, num_qubits: int, n_2q: int) -> tuple[float, float]:
    """qmap's own schedule timed with TES's constants, NOT checked by our rules: ``(T, F)``.

    One-qubit gates 0.625 µs each (qmap's ``u``/``rz`` lines), a ``cz`` 0.36 µs, ``load`` and ``store``
    15 µs each (one transfer per atom each), a ``move`` sqrt(D / 0.00275) µs for its largest displacement;
    idle decoherence by zone (storage while y <= 297 µm and not carried). ``n_2q``: the circuit's CZs.
    """
    pos = _first_positions(text, num_qubits)
    carried: set[int] = set()
    t = ts = te = 0.0
    n1 = ntr = 0
    t_s = [0.0] * num_qubits
    t_e = [0.0] * num_qubits

    def advance(dt: float) -> None:
        nonlocal t
        t += dt
        for q in range(num_qubits):
            if q in carried or MACHINE.zone_of_y(pos[q][1]) != 0:
                t_e[q] += dt
            else:
                t_s[q] += dt

    block, pending = None, []
    for raw in text.splitlines():
        line = raw.strip()
        if block is not None:
            if line == "]":
                if block == "load":
                    carried |= {q for _, _, q in pending}
                    ntr += len(pending)
                    advance(MACHINE.t_open_close)
                elif block == "store":
                    carried -= {q for _, _, q in pending}
                    ntr += len(pending)
                    advance(MACHINE.t_open_close)
                else:
                    far = max((((x - pos[q][0]) ** 2 + (y - pos[q][1]) ** 2) ** 0.5 for x, y, q in pending), default=0.0)
                    for x, y, q in pending:
                        pos[q] = (x, y)
                    advance(MACHINE.move_time(far))
                block, pending = None, []
                continue
            m = _POS.match(line)
            if m:
                pending.append((float(m.group(1)), float(m.group(2)), int(m.group(3))))
            else:
                m = re.match(r"^atom(\d+)$", line)
                if m:
                    pending.append((0.0, 0.0, int(m.group(1))))
            continue
        m = re.match(r"^@\+ (load|move|store) \[$", line)
        if m:
            block = m.group(1)
        elif re.match(r"^@\+ cz\b", line):
            advance(MACHINE.t_2q)
        elif re.match(r"^@\+ (u|rz|ry|rx)\b", line):
            n1 += 1
            advance(MACHINE.t_1q)
    del ts, te
    log_f = n1 * math.log(MACHINE.f_1q) + n_2q * math.log(MACHINE.f_2q) + ntr * math.log(MACHINE.f_transfer)
    idle = sum(a / MACHINE.t2_storage + b / MACHINE.t2_elsewhere for a, b in zip(t_s, t_e))
    return t, idle - log_f


def _first_positions(text: str, n: int) -> dict:
    pos = {}
    for raw in text.splitlines():
        m = _ATOM.match(raw.strip())
        if m:
            pos[int(m.group(3))] = (float(m.group(1)), float(m.group(2)))
    return pos


def _initial_placer():
    path = resources.files("discoverygym") / "examples" / "znaa_placer.py"
    spec = importlib.util.spec_from_file_location("znaa_initial_placer", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    """Print the table (markdown); returns 0, or 2 when mqt.qmap is missing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--circuits", nargs="*", default=None, help="circuit names (default: the suite)")
    args = parser.parse_args(argv)
    try:
        from mqt.core import load
        from mqt.qmap.na.zoned import (
            RoutingAgnosticCompiler,
            RoutingAwareCompiler,
            ZonedNeutralAtomArchitecture,
        )
    except ImportError:
        print("mqt.qmap is not installed: pip install -e '.[znaa]'", file=sys.stderr)
        return 2
    from discoverygym.envs.znaa import DATA_DIR

    arch = ZonedNeutralAtomArchitecture.from_json_string(json.dumps(ARCH))
    base = _baseline()
    ours = _initial_placer()
    print("| circuit | n | ours T µs | ours F | qmap ZAC (routing-agnostic) T / F / score | qmap routing-aware T / F / score |")
    print("|---|---|---|---|---|---|")
    for name in args.circuits or suite_names():
        circuit = _circuit(name)
        sched, kwargs = znaa.placer_inputs(circuit)
        mine = znaa.evaluate_placement(circuit, sched, ours.place(**kwargs))
        cells = []
        for compiler in (RoutingAgnosticCompiler(arch, log_level="E"), RoutingAwareCompiler(arch, log_level="E")):
            start = time.perf_counter()
            text = compiler.compile(load(str(DATA_DIR / "circuits" / f"{name}.qasm")))
            seconds = time.perf_counter() - start
            try:
                r = znaa.evaluate_placement(circuit, sched, naviz_placement(text, circuit.num_qubits))
                s = znaa.circuit_score(r.time_us, r.fidelity_term, base[name]["time_us"], base[name]["fidelity_term"])
                cells.append(f"{r.time_us:.0f} / {r.fidelity_term:.4f} / {s:+.3f} ({seconds:.1f} s)")
            except (InvalidSolution, ValueError, KeyError) as exc:
                t, f = naviz_cost(text, circuit.num_qubits, circuit.n_2q)
                s = znaa.circuit_score(t, f, base[name]["time_us"], base[name]["fidelity_term"])
                rule = str(exc).split(": ")[1] if isinstance(exc, InvalidSolution) else "off-site position"
                cells.append(f"{t:.0f} / {f:.4f} / {s:+.3f}* ({seconds:.1f} s; breaks {rule})")
        print(f"| {name} | {circuit.num_qubits} | {mine.time_us:.0f} | {mine.fidelity_term:.4f} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
