"""ZonedNeutralAtom-v0's verifier: one broken placement or machine program per rule, each refused with
its rule's name and the circuit, stage and qubit; T, F and the score against the issue's formulas."""

from __future__ import annotations

import copy
import importlib.util
import math
from importlib import resources

import pytest

from discoverygym.errors import InvalidSolution
from discoverygym.rewards import znaa
from discoverygym.rewards.znaa_circuit import Circuit, parse_qasm2, reuse_candidates, schedule
from discoverygym.rewards.znaa_machine import MACHINE, RULES, Instruction, Program, replay


def _placer():
    path = resources.files("discoverygym") / "examples" / "znaa_placer.py"
    spec = importlib.util.spec_from_file_location("znaa_placer_under_test", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLACER = _placer()
# stage 0: CZ(0,1), CZ(2,3); stage 1: CZ(1,2); qubit 4 idles; one-qubit gates before and after
TOY = Circuit("toy", 5, ((0,), (0, 1), (2, 3), (1,), (1, 2), (4,)))


def _placement(circuit=TOY):
    sched, kwargs = znaa.placer_inputs(circuit)
    return sched, PLACER.place(**kwargs)


def _refused(result, rule, circuit=TOY, stage=None, qubit=None):
    sched = schedule(circuit, MACHINE.stage_capacity)
    with pytest.raises(InvalidSolution) as err:
        znaa.evaluate_placement(circuit, sched, result)
    text = str(err.value)
    assert f": {rule}: " in text and text.startswith(f"circuit {circuit.name}")
    if stage is not None:
        assert f"stage {stage}" in text
    if qubit is not None:
        assert f"qubit {qubit}" in text
    return text


def test_the_initial_placer_is_valid_and_uses_reuse():
    sched, result = _placement()
    assert [len(s) for s in sched.stages] == [2, 1]
    assert reuse_candidates(TOY, sched) == [[1]]  # CZ(0,1) -> CZ(1,2) share qubit 1 (or 2; the matching keeps one)
    r = znaa.evaluate_placement(TOY, sched, result)
    assert r.time_us > 0 and r.fidelity_term > 0 and r.n_stages == 2


def test_site_range():
    _, result = _placement()
    result["stages"][0][0][4] = [1, 7, 0]  # the entangling zone has rows 0..6
    _refused(result, "site-range", stage=0, qubit=4)


def test_initial_storage():
    _, result = _placement()
    result["initial"][3] = [1, 0, 0]
    _refused(result, "initial-storage", qubit=3)


def test_group_count():
    _, result = _placement()
    result["stages"].pop()
    _refused(result, "group-count")
    _, result = _placement()
    result["stages"][0] = [result["stages"][0][0]] * (znaa.MAX_SNAPSHOTS + 1)
    _refused(result, "group-count", stage=0)


def test_forged_extra_keys_are_refused():
    _, result = _placement()
    result["score"] = 1e9
    _refused(result, "group-count")


def test_no_overlap():
    _, result = _placement()
    snap = result["stages"][1][1]
    snap[4] = list(snap[0])
    _refused(result, "no-overlap", stage=1, qubit=4)


def test_no_land_on_vacated():
    _, result = _placement()
    at_pulse, after = result["stages"][0]
    after[4] = list(at_pulse[0])  # qubit 0 flies home, idle qubit 4 takes its entangling site at once
    _refused(result, "no-land-on-vacated", stage=0, qubit=4)


def test_gate_zone():
    _, result = _placement()
    result["stages"][0][0][4] = [1, 6, 38]  # an idle qubit in the entangling zone at the pulse
    _refused(result, "gate-zone", stage=0, qubit=4)
    _, result = _placement()
    result["stages"][1][0][2] = list(result["initial"][2])  # a gate qubit left in storage
    _refused(result, "gate-zone", stage=1, qubit=2)


def test_gate_pairs():
    _, result = _placement()
    result["stages"][0][0][1] = [1, 6, 39]  # CZ(0,1)'s qubits in different pairs
    _refused(result, "gate-pairs", stage=0, qubit=0)


def test_final_storage():
    _, result = _placement()
    last = result["stages"][-1]
    last[-1] = copy.deepcopy(last[0])  # stays where the last pulse was
    _refused(result, "final-storage", stage="end")


# ---------------------------------------------------------------- machine rules (forged programs)
PAIR = Circuit("pair", 2, ((0,), (0, 1)))
HOME = ((0, 99, 0), (0, 99, 1))  # x = 0, 3; y = 297
Y0 = MACHINE.entangling_y0  # 307


def _program(*ins, initial=HOME, circuit=PAIR):
    return Program(circuit.name, circuit.num_qubits, circuit.ops, initial, tuple(ins))


TO_PAIR = (Instruction("open", 0, zone=0, xs=(0, 3), ys=(297,), qubits=(0, 1)),
           Instruction("move", 0, xs=(0, 2), ys=(Y0,)), Instruction("close", 0, zone=1))
BACK = (Instruction("open", 0, zone=1, xs=(0, 2), ys=(Y0,), qubits=(0, 1)),
        Instruction("move", 0, xs=(0, 3), ys=(297,)), Instruction("close", 0, zone=0))
GOOD = (Instruction("1q", -1, gate=0), *TO_PAIR, Instruction("pulse", 0), *BACK)


def _machine_refused(program, rule, qubit=None):
    with pytest.raises(InvalidSolution) as err:
        replay(program)
    text = str(err.value)
    assert f": {rule}: " in text and text.startswith("circuit pair")
    if qubit is not None:
        assert f"qubit {qubit}" in text
    return text


def test_time_and_fidelity_follow_the_issue_formulas():
    """A CZ on two atoms moved in and out in one batch each: T and F by hand from the TES constants."""
    out = replay(_program(*GOOD))
    move = math.sqrt(math.sqrt(1 + 10 ** 2) / 0.00275)  # largest displacement: (3, 297) -> (2, 307)
    t = 0.625 + 2 * (15 + move + 15) + 0.36
    assert out.time_us == pytest.approx(t, rel=1e-12)
    t_storage, t_elsewhere = 0.625, t - 0.625  # the 1Q gate in storage, everything after it outside
    # two atoms x two batches x (pick-up + drop) = 8 transfers
    f = -(math.log(0.9997) + math.log(0.995) + 8 * math.log(0.999)) + 2 * (t_storage / 1e8 + t_elsewhere / 1.5e6)
    assert out.fidelity_term == pytest.approx(f, rel=1e-12)
    assert (out.n_1q, out.n_2q, out.n_transfers, out.n_batches) == (1, 1, 8, 2)


def test_circuit_and_suite_scores_follow_tes():
    assert znaa.circuit_score(50.0, 0.5, 100.0, 1.0) == pytest.approx(math.log(2))
    assert znaa.circuit_score(100.0, 1.0, 100.0, 1.0) == 0.0
    s = znaa.suite_score([1.0, 0.0], [4, 16])  # weights ln 4 and ln 16 = 2 ln 4
    assert s == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="positive"):
        znaa.circuit_score(0.0, 1.0, 1.0, 1.0)


def test_aod_one_zone():
    bad = Instruction("open", 0, zone=0, xs=(0, 3), ys=(297, Y0), qubits=(0, 1))
    _machine_refused(_program(Instruction("1q", -1, gate=0), bad), "aod-one-zone")


def test_aod_spacing():
    bad = Instruction("move", 0, xs=(0, 1), ys=(Y0,))
    _machine_refused(_program(Instruction("1q", -1, gate=0), TO_PAIR[0], bad), "aod-spacing")


def test_aod_order():
    bad = Instruction("move", 0, xs=(2, 0), ys=(Y0,))  # the two column lines cross
    _machine_refused(_program(Instruction("1q", -1, gate=0), TO_PAIR[0], bad), "aod-order")


def test_aod_stray_pickup():
    bad = Instruction("open", 0, zone=0, xs=(0, 3), ys=(297,), qubits=(0,))  # qubit 1 sits on a crossing
    _machine_refused(_program(Instruction("1q", -1, gate=0), bad), "aod-stray-pickup", qubit=1)


def test_aod_drop():
    bad = Instruction("move", 0, xs=(0, 5), ys=(Y0,))  # x = 5 is no entangling site
    _machine_refused(_program(Instruction("1q", -1, gate=0), TO_PAIR[0], bad, TO_PAIR[2]), "aod-drop", qubit=1)


def test_pulse_pairs():
    lone = (Instruction("open", 0, zone=0, xs=(0,), ys=(297,), qubits=(0,)),
            Instruction("move", 0, xs=(0,), ys=(Y0,)), Instruction("close", 0, zone=1))
    _machine_refused(_program(Instruction("1q", -1, gate=0), *lone, Instruction("pulse", 0)), "pulse-pairs", qubit=0)


def test_gate_order():
    # the CZ before the one-qubit gate that precedes it on qubit 0
    _machine_refused(_program(*TO_PAIR, Instruction("pulse", 0), *BACK, Instruction("1q", 0, gate=0)),
                     "gate-order", qubit=0)


def test_all_gates():
    _machine_refused(_program(Instruction("1q", -1, gate=0)), "all-gates")


def test_machine_final_storage():
    _machine_refused(_program(*GOOD[:-3]), "final-storage")


def test_every_rule_has_a_test():
    tested = {name[len("test_"):].replace("_", "-") for name in globals() if name.startswith("test_")}
    tested.add("final-storage")  # test_final_storage / test_machine_final_storage
    assert set(RULES) <= tested


def test_qasm_reader_refuses_other_gates():
    with pytest.raises(ValueError, match="unsupported gate"):
        parse_qasm2("OPENQASM 2.0;\nqreg q[2];\ncx q[0],q[1];\n", "x")
    c = parse_qasm2('OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\nu(pi/2,0,pi) q[0];\ncz q[0],q[1];\n', "ok")
    assert c.ops == ((0,), (0, 1))


def test_schedule_cuts_a_layer_beyond_the_capacity():
    c = Circuit("wide", 8, tuple((2 * i, 2 * i + 1) for i in range(4)) + ((0,),))
    sched = schedule(c, capacity=3)
    assert sched.stages == ((0, 1, 2), (3,)) and sched.riders == ((), (4,), ())
