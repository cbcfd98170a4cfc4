"""ZAC-style placer: the initial program (and the per-circuit baseline) of ZonedNeutralAtom-v0.

A plain reading of ZAC's placement (Lin et al. 2025, "Reuse-aware compilation for zoned quantum
architectures based on neutral atoms", HPCA, Sec. 4): every qubit has a fixed *home* site in the
storage row nearest the entangling zone; for each stage, the gate qubits fly to entangling pairs
nearest their homes, and after the pulse every qubit flies home except the ones the reuse analysis
lets stay (a qubit shared by matched gates of this stage and the next): it waits in its pair and
its next partner joins it. No simulated annealing, no look-ahead: a baseline to improve on.

Contract (ZonedNeutralAtom-v0): ``place(num_qubits, stages, reuse, arch)`` returns
``{"initial": [site per qubit], "stages": [group per stage]}``; a group is a list of full snapshots
(the first is where the stage's pulse runs), a site is ``[zone, row, col]`` (0 storage, 1 entangling).
"""


def site_xy(site, arch):
    """(x, y) in µm of a site [zone, row, col] on the machine described by ``arch``."""
    zone, row, col = site
    if zone == 0:
        return col * arch["storage_pitch_um"], row * arch["storage_pitch_um"]
    x = (col // 2) * arch["pair_pitch_um"] + (col % 2) * arch["partner_gap_um"]
    return x, arch["entangling_y0_um"] + row * arch["row_pitch_um"]


def home_sites(num_qubits, arch):
    """Home of each qubit: storage rows from the one nearest the entangling zone, under its width."""
    width_um = (arch["entangling_pairs"] - 1) * arch["pair_pitch_um"] + arch["partner_gap_um"]
    per_row = min(arch["storage_cols"], width_um // arch["storage_pitch_um"] + 1)
    last = arch["storage_rows"] - 1
    return [[0, last - q // per_row, q % per_row] for q in range(num_qubits)]


def gate_snapshot(gates, current, arch):
    """Sites at the pulse: kept qubits stay, their partners join them, other pairs go to free pairs nearby."""
    snap = [list(s) for s in current]
    taken = {tuple(s) for s in current if s[0] == 1}
    free = [(r, p) for r in range(arch["entangling_rows"]) for p in range(arch["entangling_pairs"])
            if (1, r, 2 * p) not in taken and (1, r, 2 * p + 1) not in taken]
    fresh = []
    for a, b in gates:
        if current[a][0] == 1 or current[b][0] == 1:
            stay, come = (a, b) if current[a][0] == 1 else (b, a)
            _, r, c = current[stay]
            snap[come] = [1, r, c ^ 1]
        else:
            fresh.append((a, b))
    centre = {}
    for a, b in fresh:
        (xa, ya), (xb, yb) = site_xy(current[a], arch), site_xy(current[b], arch)
        centre[(a, b)] = ((xa + xb) / 2, (ya + yb) / 2)
    fresh.sort(key=lambda g: centre[g])
    for a, b in fresh:
        cx, cy = centre[(a, b)]
        best = min(free, key=lambda rp: (abs(site_xy([1, rp[0], 2 * rp[1]], arch)[0] + 1 - cx)
                                         + abs(site_xy([1, rp[0], 0], arch)[1] - cy), rp))
        free.remove(best)
        r, p = best
        left, right = (a, b) if site_xy(current[a], arch)[0] <= site_xy(current[b], arch)[0] else (b, a)
        snap[left], snap[right] = [1, r, 2 * p], [1, r, 2 * p + 1]
    return snap


def place(num_qubits, stages, reuse, arch):
    """One group per stage: [sites at the pulse, sites after it (kept qubits stay, others go home)]."""
    home = home_sites(num_qubits, arch)
    current = [list(s) for s in home]
    groups = []
    for s, gates in enumerate(stages):
        at_pulse = gate_snapshot(gates, current, arch)
        keep = set(reuse[s]) if s < len(reuse) else set()
        after = [at_pulse[q] if q in keep else home[q] for q in range(num_qubits)]
        groups.append([at_pulse, after])
        current = after
    return {"initial": home, "stages": groups}
