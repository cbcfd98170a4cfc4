"""SABRE qubit router: the initial program of QubitRouting-v0.

A plain Python implementation of SABRE (Li, Ding, Xie 2019, "Tackling the qubit mapping problem
for NISQ-era quantum devices", ASPLOS, Sec. 4): the front layer of ready two-qubit gates, a
lookahead ("extended") set of the next gates, the decay heuristic, and the reverse-traversal
search for the initial layout (forward pass, backward pass on the reversed circuit, final forward
pass). Two cheap LightSABRE improvements (Zou et al. 2024, arXiv:2409.08368, Sec. 3): a
"release valve" that routes the closest front gate along a shortest path when the heuristic has
gone many SWAPs without progress, and several seeded layout trials keeping the fewest SWAPs.

Contract (QubitRouting-v0): ``route(num_logical, gates, num_physical, edges, seed, budget_s)``
returns ``{"layout": [physical of logical 0, 1, ...], "ops": [...]}`` where each op is either an
int ``i`` (execute two-qubit gate ``gates[i]`` on the physical qubits its logical qubits occupy
now) or a pair ``[p, q]`` (a SWAP on the coupling edge ``p``-``q``).
"""

import itertools
import random
import time
from collections import deque

EXTENDED_SET_SIZE = 20     # SABRE Sec. 4.3: lookahead window
EXTENDED_SET_WEIGHT = 0.5  # W in H = H_front + W * H_extended
DECAY_DELTA = 0.001        # SABRE Sec. 4.4
DECAY_RESET = 5            # decay reset period (SWAPs)
LAYOUT_TRIALS = 2          # initial layouts tried (1 = BFS from the centre, then random ones)


def all_distances(num_physical, adjacency):
    """Hop distances between every pair of physical qubits (BFS from each)."""
    big = 10 * num_physical + 10
    dist = []
    for source in range(num_physical):
        row = [big] * num_physical
        row[source] = 0
        todo = deque([source])
        while todo:
            u = todo.popleft()
            for v in adjacency[u]:
                if row[v] == big:
                    row[v] = row[u] + 1
                    todo.append(v)
        dist.append(row)
    return dist


def shortest_path(adjacency, a, b):
    """One shortest path from ``a`` to ``b`` (list of physical qubits, both ends included)."""
    parent = {a: None}
    todo = deque([a])
    while todo:
        u = todo.popleft()
        if u == b:
            break
        for v in adjacency[u]:
            if v not in parent:
                parent[v] = u
                todo.append(v)
    path = [b]
    while parent[path[-1]] is not None:
        path.append(parent[path[-1]])
    return path[::-1]


def route_pass(gates, num_logical, adjacency, dist, layout, rng, record=True):
    """Route ``gates`` once from ``layout``; return (ops, final layout, number of SWAPs)."""
    num_physical = len(adjacency)
    l2p = list(layout)
    p2l = [-1] * num_physical
    for logical, physical in enumerate(l2p):
        p2l[physical] = logical
    queues = [[] for _ in range(num_logical)]
    for index, (a, b) in enumerate(gates):
        queues[a].append(index)
        queues[b].append(index)
    position = [0] * num_logical
    successors = [None] * len(gates)
    for queue in queues:
        for k, g in enumerate(queue):
            nxt = queue[k + 1] if k + 1 < len(queue) else None
            successors[g] = (successors[g] or ()) + ((nxt,) if nxt is not None else ())

    def head(q):
        return queues[q][position[q]] if position[q] < len(queues[q]) else None

    front = set()
    for q in range(num_logical):
        g = head(q)
        if g is not None:
            a, b = gates[g]
            if head(a) == g and head(b) == g:
                front.add(g)

    ops = []
    swaps = 0
    decay = [1.0] * num_physical
    since_progress = 0
    valve = 10 * max(max(row) for row in dist)  # SWAPs without progress before the release valve
    while front:
        progressed = True
        executed_any = False
        while progressed:
            progressed = False
            for g in list(front):
                a, b = gates[g]
                if dist[l2p[a]][l2p[b]] == 1:
                    front.discard(g)
                    if record:
                        ops.append(g)
                    position[a] += 1
                    position[b] += 1
                    for q in (a, b):
                        h = head(q)
                        if h is not None:
                            x, y = gates[h]
                            if head(x) == h and head(y) == h:
                                front.add(h)
                    progressed = executed_any = True
        if not front:
            break
        if executed_any:
            decay = [1.0] * num_physical
            since_progress = 0
        if since_progress >= valve:  # LightSABRE release valve: walk the closest front gate together
            g = min(front, key=lambda k: dist[l2p[gates[k][0]]][l2p[gates[k][1]]])
            a, b = gates[g]
            path = shortest_path(adjacency, l2p[a], l2p[b])
            for u, v in itertools.pairwise(path[:-1]):
                _swap(l2p, p2l, u, v)
                swaps += 1
                if record:
                    ops.append([u, v])
            since_progress = 0
            continue
        front_list = list(front)
        extended = []
        seen = set(front_list)
        todo = deque(front_list)
        while todo and len(extended) < EXTENDED_SET_SIZE:
            for s in successors[todo.popleft()]:
                if s not in seen:
                    seen.add(s)
                    extended.append(s)
                    todo.append(s)
        touching = {}
        base_front = 0
        for g in front_list:
            a, b = gates[g]
            base_front += dist[l2p[a]][l2p[b]]
            touching.setdefault(a, []).append((b, 0))
            touching.setdefault(b, []).append((a, 0))
        base_ext = 0
        for g in extended:
            a, b = gates[g]
            base_ext += dist[l2p[a]][l2p[b]]
            touching.setdefault(a, []).append((b, 1))
            touching.setdefault(b, []).append((a, 1))
        n_front = len(front_list)
        n_ext = max(1, len(extended))
        candidates = set()
        for g in front_list:
            for q in gates[g]:
                p = l2p[q]
                for v in adjacency[p]:
                    candidates.add((p, v) if p < v else (v, p))
        best, best_score = [], None
        for p, v in sorted(candidates):
            delta = [0, 0]
            for phys, other_phys in ((p, v), (v, p)):
                logical = p2l[phys]
                if logical < 0 or logical not in touching:
                    continue
                for partner, which in touching[logical]:
                    pp = l2p[partner]
                    moved = pp if pp not in (p, v) else (v if pp == p else p)
                    delta[which] += dist[other_phys][moved] - dist[phys][pp]
            score = max(decay[p], decay[v]) * ((base_front + delta[0]) / n_front
                                               + EXTENDED_SET_WEIGHT * (base_ext + delta[1]) / n_ext)
            if best_score is None or score < best_score - 1e-12:
                best, best_score = [(p, v)], score
            elif abs(score - best_score) <= 1e-12:
                best.append((p, v))
        p, v = best[rng.randrange(len(best))] if len(best) > 1 else best[0]
        _swap(l2p, p2l, p, v)
        swaps += 1
        since_progress += 1
        if record:
            ops.append([p, v])
        decay[p] += DECAY_DELTA
        decay[v] += DECAY_DELTA
        if swaps % DECAY_RESET == 0:
            decay = [1.0] * num_physical
    return ops, l2p, swaps


def _swap(l2p, p2l, p, v):
    """Exchange the logical qubits on physical qubits ``p`` and ``v`` (either may be empty)."""
    lp, lv = p2l[p], p2l[v]
    p2l[p], p2l[v] = lv, lp
    if lp >= 0:
        l2p[lp] = v
    if lv >= 0:
        l2p[lv] = p


def centre_layout(num_logical, gates, adjacency, dist):
    """Logical qubits (busiest first) on physical qubits in BFS order from the graph's centre."""
    num_physical = len(adjacency)
    centre = min(range(num_physical), key=lambda u: (max(dist[u]), sum(dist[u])))
    order = sorted(range(num_physical), key=lambda u: (dist[centre][u], u))
    busy = [0] * num_logical
    for a, b in gates:
        busy[a] += 1
        busy[b] += 1
    logical = sorted(range(num_logical), key=lambda q: (-busy[q], q))
    layout = [0] * num_logical
    for q, p in zip(logical, order):
        layout[q] = p
    return layout


def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    """Route a circuit's two-qubit gates on a coupling graph (SABRE with reverse traversal).

    Args:
        num_logical: logical qubits of the circuit.
        gates: the circuit's two-qubit gates in order, ``[[a, b], ...]`` (logical qubits).
        num_physical: physical qubits of the device.
        edges: coupling edges ``[[p, q], ...]`` (undirected).
        seed: seeds the tie-breaks and the random layout trials.
        budget_s: wall-clock seconds this case may use (None: no limit).

    Returns:
        ``{"layout": [...], "ops": [...]}`` (see the module docstring).
    """
    start = time.monotonic()
    adjacency = [[] for _ in range(num_physical)]
    for p, q in edges:
        if q not in adjacency[p]:
            adjacency[p].append(q)
            adjacency[q].append(p)
    dist = all_distances(num_physical, adjacency)
    gates = [tuple(g) for g in gates]
    reverse = gates[::-1]
    rng = random.Random(seed)
    best = None
    for trial in range(LAYOUT_TRIALS):
        if trial == 0:
            layout = centre_layout(num_logical, gates, adjacency, dist)
        else:
            layout = rng.sample(range(num_physical), num_logical)
        _, layout, _ = route_pass(gates, num_logical, adjacency, dist, layout, rng, record=False)
        _, layout, _ = route_pass(reverse, num_logical, adjacency, dist, layout, rng, record=False)
        ops, _, swaps = route_pass(gates, num_logical, adjacency, dist, layout, rng)
        if best is None or swaps < best[0]:
            best = (swaps, layout, ops)
        if budget_s is not None and (time.monotonic() - start) * (trial + 2) / (trial + 1) > 0.5 * budget_s:
            break
    return {"layout": best[1], "ops": best[2]}
