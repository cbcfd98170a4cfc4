"""A hand-written improvement of the ZAC-style placer for ZonedNeutralAtom-v0 (a candidate, not the baseline).

Same homes, same reuse as ``discoverygym/examples/znaa_placer.py``; one change: the stage's fresh
gates go to the entangling row nearest storage, *in the order of their qubits' homes*, so that the
router can carry many of them in one AOD batch (a batch keeps the atoms' order and takes atoms of
one storage row to one entangling row). Gates are sorted by the x of their left qubit's home and
placed in pairs chosen by a monotone assignment (dynamic programming over gates x pairs, cost =
horizontal distance from the gate's centre); rows beyond the first take what does not fit.

Evaluate: ``discoverygym evaluate ZonedNeutralAtom-v0 benchmarks/znaa_ordered_placer.py``.
"""


def site_xy(site, arch):
    """(x, y) in µm of a site [zone, row, col]."""
    zone, row, col = site
    if zone == 0:
        return col * arch["storage_pitch_um"], row * arch["storage_pitch_um"]
    x = (col // 2) * arch["pair_pitch_um"] + (col % 2) * arch["partner_gap_um"]
    return x, arch["entangling_y0_um"] + row * arch["row_pitch_um"]


def home_sites(num_qubits, arch):
    """Storage rows nearest the entangling zone, under its width (as the initial placer)."""
    width_um = (arch["entangling_pairs"] - 1) * arch["pair_pitch_um"] + arch["partner_gap_um"]
    per_row = min(arch["storage_cols"], width_um // arch["storage_pitch_um"] + 1)
    last = arch["storage_rows"] - 1
    return [[0, last - q // per_row, q % per_row] for q in range(num_qubits)]


def monotone_assign(centres, slots):
    """Increasing assignment of sorted centres to sorted slot x's minimising sum |centre - x| (len(slots) >= len(centres))."""
    n, m = len(centres), len(slots)
    inf = float("inf")
    best = [[inf] * (m + 1) for _ in range(n + 1)]
    for j in range(m + 1):
        best[0][j] = 0.0
    for i in range(1, n + 1):
        for j in range(i, m + 1):
            best[i][j] = min(best[i][j - 1], best[i - 1][j - 1] + abs(centres[i - 1] - slots[j - 1]))
    out, j = [], m
    for i in range(n, 0, -1):
        while best[i][j] == best[i][j - 1] and j > i:
            j -= 1
        out.append(j - 1)
        j -= 1
    return out[::-1]


def gate_snapshot(gates, current, arch):
    """Kept qubits stay and their partners join them; fresh gates fill rows in home order."""
    snap = [list(s) for s in current]
    taken = {tuple(s) for s in current if s[0] == 1}
    fresh = []
    for a, b in gates:
        if current[a][0] == 1 or current[b][0] == 1:
            stay, come = (a, b) if current[a][0] == 1 else (b, a)
            _, r, c = current[stay]
            snap[come] = [1, r, c ^ 1]
        else:
            xa, xb = site_xy(current[a], arch)[0], site_xy(current[b], arch)[0]
            fresh.append((a, b) if xa <= xb else (b, a))
    fresh.sort(key=lambda g: (site_xy(current[g[0]], arch)[0], site_xy(current[g[1]], arch)[0]))
    for row in range(arch["entangling_rows"]):
        if not fresh:
            break
        pairs = [p for p in range(arch["entangling_pairs"])
                 if (1, row, 2 * p) not in taken and (1, row, 2 * p + 1) not in taken]
        batch, fresh = fresh[:len(pairs)], fresh[len(pairs):]
        centres = [(site_xy(current[a], arch)[0] + site_xy(current[b], arch)[0]) / 2 for a, b in batch]
        slots = [site_xy([1, row, 2 * p], arch)[0] + 1 for p in pairs]
        for (a, b), k in zip(batch, monotone_assign(centres, slots)):
            p = pairs[k]
            snap[a], snap[b] = [1, row, 2 * p], [1, row, 2 * p + 1]
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
