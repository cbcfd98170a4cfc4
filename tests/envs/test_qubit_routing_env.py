"""QubitRouting-v0: gym.make + check_env, the initial SABRE program, and broken candidates failing per case."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import discoverygym  # noqa: F401 - registers the ids
from discoverygym.envs.qubit_routing import QubitRoutingTask
from discoverygym.errors import InvalidSolution

pytest.importorskip("qiskit")

SMALL = ["4gt13_92_q20", "4mod5-v1_22_q20"]  # suite reference: 0 added CNOTs on both


@pytest.fixture(scope="module")
def env():
    return gym.make("QubitRouting-v0", cases=SMALL, case_time_limit_s=20.0).unwrapped


def test_make_check_env_and_initial_program_routes_without_swaps(env):
    _, info = env.reset(seed=0)
    assert info["valid"], info["error"]
    rows = info["metrics"]["cases"]
    assert [r["id"] for r in rows] == SMALL
    assert [r["reference_cnots"] for r in rows] == [0, 0]  # suite.json
    # both circuits have a SWAP-free layout on q20 (the reference needs none); SABRE finds it
    assert [r["added_cnots"] for r in rows] == [0, 0]
    assert info["score"] == 0.0
    check_env(gym.make("QubitRouting-v0", cases=SMALL[1:], case_time_limit_s=20.0).unwrapped)


def _broken(body: str) -> str:
    return QubitRoutingTask(cases=1).initial_program() + "\n\n_sabre_route = route\n\n" + body


DROPPED = _broken("""
def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    out = _sabre_route(num_logical, gates, num_physical, edges, seed, budget_s)
    last = max(op for op in out["ops"] if isinstance(op, int))
    out["ops"] = [op for op in out["ops"] if op != last]
    return out
""")
CRASH = _broken("""
def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    raise RuntimeError("router exploded")
""")
HANG = _broken("""
def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    while True:
        pass
""")
ILLEGAL_SWAP = _broken("""
def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    out = _sabre_route(num_logical, gates, num_physical, edges, seed, budget_s)
    edge_set = {tuple(sorted(e)) for e in edges}
    far = next((0, q) for q in range(1, num_physical) if (0, q) not in edge_set)
    out["ops"].insert(0, list(far))
    return out
""")


@pytest.mark.parametrize("source, reason", [
    (DROPPED, "never executed"), (CRASH, "router exploded"), (ILLEGAL_SWAP, "not a coupling edge"),
])
def test_broken_candidates_get_the_failure_reward_naming_the_case(env, source, reason):
    env.reset(seed=0)
    _, reward, _, _, info = env.step(source)
    assert not info["valid"] and reward == env.failure_reward
    assert "case 4gt13_92_q20" in info["error"] and reason in info["error"], info["error"]


def test_a_hanging_router_times_out():
    env = gym.make("QubitRouting-v0", cases=SMALL[1:], case_time_limit_s=3.0).unwrapped
    env.reset(seed=0)
    _, reward, _, _, info = env.step(HANG)
    assert reward == env.failure_reward
    assert "case 4mod5-v1_22_q20" in info["error"] and "time" in info["error"].lower(), info["error"]


def test_options_select_cases_and_topologies():
    assert len(QubitRoutingTask(cases=5).cases) == 5
    assert {c.topology for c in QubitRoutingTask(topologies="willow").cases} == {"willow"}
    assert len(QubitRoutingTask().cases) == 72
    with pytest.raises(ValueError, match="unknown case"):
        QubitRoutingTask(cases=["nope_q20"])
    with pytest.raises(ValueError, match="unknown topologies"):
        QubitRoutingTask(topologies=["sycamore"])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"cases": True}, TypeError, "cases must be"),
    ({"cases": 2.5}, TypeError, "cases must be"),
    ({"cases": ["4gt13_92_q20", "4gt13_92_q20"]}, ValueError, "more than once"),  # would count the case twice
    ({"n_cases": "x"}, TypeError, "n_cases must be an int"),
])
def test_bad_case_options_are_refused_clearly(kwargs, error, match):
    from discoverygym.envs.qubit_routing import make_qubit_routing

    with pytest.raises(error, match=match):
        make_qubit_routing(**kwargs)


PLAIN = _broken("""
def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    return _sabre_route(num_logical, gates, num_physical, edges, 0, budget_s)
""")
IDLE_SWAP = _broken("""
def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    out = _sabre_route(num_logical, gates, num_physical, edges, 0, budget_s)
    occupied = set(out["layout"])
    idle = next(e for e in sorted(map(sorted, edges)) if not set(e) & occupied)
    out["ops"].insert(0, list(idle))  # a SWAP of two qubits that hold no logical qubit
    return out
""")


def test_a_swap_between_unoccupied_qubits_is_scored_by_its_cost_not_refused(env):
    """Issue 40 #9: the routing was refused (reward -1e9) on main; it is the initial routing plus one SWAP."""
    one = gym.make("QubitRouting-v0", cases=SMALL[:1], case_time_limit_s=20.0).unwrapped
    one.reset(seed=0)
    _, _, _, _, info = one.step(PLAIN)
    _, _, _, _, step = one.step(IDLE_SWAP)
    assert info["valid"], info["error"]
    assert step["valid"], step["error"]
    weight = one.task.cases[0].weight  # 0.2 on q20 (suite.json)
    assert step["metrics"]["cases"][0]["added_cnots"] == info["metrics"]["cases"][0]["added_cnots"] + 3
    assert step["score"] == pytest.approx(info["score"] - 3 * weight)


NOOP_SWAPS = _broken("""
def route(num_logical, gates, num_physical, edges, seed=0, budget_s=None):
    out = _sabre_route(num_logical, gates, num_physical, edges, seed, budget_s)
    out["ops"] = [list(edges[0])] * 1000 + out["ops"]  # an even number of SWAPs on one edge: a no-op
    return out
""")


def test_a_flood_of_noop_swaps_is_refused_before_it_is_replayed(env):
    """Issue 40 #6: 4,000,000 no-op SWAPs kept the parent busy > 300 s; 1,000 already exceed 4gt13_92_q20's 290."""
    from discoverygym.envs.qubit_routing import _circuit, _topology
    from discoverygym.rewards import qubit_routing as verifier

    circuit, topology = _circuit("4gt13_92"), _topology("q20")
    assert verifier.max_ops(circuit, topology) == 30 * (2 * 4 + 1) + 20  # q20's diameter is 4
    env.reset(seed=0)
    _, reward, _, _, info = env.step(NOOP_SWAPS)
    assert reward == env.failure_reward
    assert "case 4gt13_92_q20" in info["error"] and "at most 290 ops" in info["error"], info["error"]
    # the verifier's own bound, for callers outside the env
    with pytest.raises(InvalidSolution, match="more than this case's limit 290"):
        verifier.check_routing(circuit, topology, {"layout": list(range(16)), "ops": [[0, 1]] * 291})


def test_more_cases_than_the_suite_has_is_an_error():
    from discoverygym.envs.qubit_routing import make_qubit_routing

    with pytest.raises(ValueError, match="only 72 cases"):
        make_qubit_routing(n_cases=99999)
    with pytest.raises(ValueError, match="only 24 cases"):
        make_qubit_routing(n_cases=25, topologies="q20")
