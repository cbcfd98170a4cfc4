"""GPU-kernel problems, in-process parts: references, tolerance, static checks, timing rule, env surface.

The references are compared with independent float64 NumPy implementations written from the
problem statement (einsum for the triangle product; explicit per-head keys and values for MLA).
"""

from __future__ import annotations

import math
import statistics

import gymnasium as gym
import numpy as np
import pytest

import discoverygym  # noqa: F401 - registers the env ids
from discoverygym.envs.kernels import MLADecodeTask, TriMulTask, make_mla_decode, make_trimul
from discoverygym.errors import InvalidSolution
from discoverygym.rewards.kernels import specs
from discoverygym.rewards.kernels.static_checks import check_program, violations
from discoverygym.types import State

torch = pytest.importorskip("torch")
from discoverygym.rewards.kernels import mla, timing, tolerance, trimul


# ----------------------------------------------------------------------------- TriMul reference
def _layer_norm(a: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = a.mean(-1, keepdims=True)
    var = ((a - mu) ** 2).mean(-1, keepdims=True)
    return (a - mu) / np.sqrt(var + eps) * w + b


def _trimul_numpy(data) -> np.ndarray:
    x, mask, w, _ = data
    x, mask = x.double().numpy(), mask.double().numpy()
    w = {k: v.double().numpy() for k, v in w.items()}
    sig = lambda a: 1 / (1 + np.exp(-a))
    xn = _layer_norm(x, w["norm.weight"], w["norm.bias"])
    m = mask[..., None]
    left = np.einsum("bikc,dc->bikd", xn, w["left_proj.weight"]) * m * sig(xn @ w["left_gate.weight"].T)
    right = np.einsum("bjkc,dc->bjkd", xn, w["right_proj.weight"]) * m * sig(xn @ w["right_gate.weight"].T)
    t = np.einsum("bikd,bjkd->bijd", left, right)
    t = _layer_norm(t, w["to_out_norm.weight"], w["to_out_norm.bias"]) * sig(xn @ w["out_gate.weight"].T)
    return t @ w["to_out.weight"].T


@pytest.mark.parametrize("case", specs.TRIMUL_CPU_TESTS, ids=lambda c: c.name)
def test_trimul_reference_matches_independent_einsum(case):
    data = trimul.generate_input(case, "cpu")
    ref = trimul.reference(data)
    expected = _trimul_numpy(data)
    assert ref.shape == (case.batch, case.seqlen, case.seqlen, case.dim) and ref.dtype == torch.float32
    np.testing.assert_allclose(ref.double().numpy(), expected, rtol=1e-4, atol=1e-4)


def test_trimul_inputs_are_seeded_and_follow_the_case():
    masked = specs.TRIMUL_CPU_TESTS[1]
    a, b = trimul.generate_input(masked, "cpu"), trimul.generate_input(masked, "cpu")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    other = trimul.generate_input(masked, "cpu", seed=masked.seed + 1)
    assert not torch.equal(a[0], other[0])
    assert set(a[1].unique().tolist()) == {0.0, 1.0}  # a real random mask
    assert torch.all(trimul.generate_input(specs.TRIMUL_CPU_TESTS[0], "cpu")[1] == 1)
    cauchy = trimul.generate_input(specs.TRIMUL_CPU_TESTS[3], "cpu")[0]
    # Cauchy(0, 2): median |x| is 2 and tails are heavy; a normal sample has median |x| ~ 0.67
    assert 1.7 < float(cauchy.abs().median()) < 2.3 and float(cauchy.abs().max()) > 100
    assert a[2]["to_out.weight"].shape == (masked.dim, masked.hidden)
    assert a[2]["left_gate.weight"].shape == (masked.hidden, masked.dim)


def test_full_size_cases_match_the_task_definition():
    assert len(specs.TRIMUL_TESTS) == 18 and len(specs.TRIMUL_BENCHMARKS) == 7
    assert {(c.seqlen, c.batch, c.dim, c.seed) for c in specs.TRIMUL_BENCHMARKS} == {
        (256, 2, 128, 9371),
        (768, 1, 128, 381),
        (256, 2, 384, 2301),
        (512, 1, 128, 12819),
        (1024, 1, 128, 381),
        (768, 1, 384, 481),
        (1024, 1, 384, 23291),
    }
    assert sum(c.distribution == "cauchy" for c in specs.TRIMUL_TESTS) == 7
    assert all(c.hidden == 128 for c in specs.TRIMUL_TESTS + specs.TRIMUL_BENCHMARKS)
    assert [c.prefill for c in specs.MLA_TESTS] == [128, 512, 1024, 2048]
    assert [c.prefill for c in specs.MLA_BENCHMARKS] == [6144]
    assert all(specs.case_from_dict(c.to_dict()) == c for c in specs.TRIMUL_TESTS + specs.MLA_TESTS)


# ----------------------------------------------------------------------------- MLA reference
def _mla_numpy(data):
    """Explicit per-head keys and values (no weight absorption), float64."""
    cfg, x, cache = data
    f = lambda t: t.double().numpy()
    L, h = cfg["seq_len"], cfg["n_heads"]
    dkv, r, nope, dv = (
        cfg["kv_lora_rank"],
        cfg["qk_rope_head_dim"],
        cfg["qk_nope_head_dim"],
        cfg["v_head_dim"],
    )
    xs = f(x)[:, 0]
    new = xs @ f(cfg["KV_proj_down_weight"]).T
    new = torch.from_numpy(new).to(torch.bfloat16).double().numpy()  # the cache stores bf16
    c = np.concatenate([f(cache)[:, :L], new[:, None]], axis=1)  # (B, L+1, dkv + r)
    q = ((xs @ f(cfg["Q_proj_down_weight"]).T) @ f(cfg["Q_proj_up_weight"]).T).reshape(len(xs), h, nope + r)
    kv = (c[..., :dkv] @ f(cfg["KV_proj_up_weight"]).T).reshape(len(xs), L + 1, h, nope + dv)
    k_nope, v = kv[..., :nope], kv[..., nope:]
    freqs = 10000.0 ** (-np.arange(r // 2) / (r // 2))

    def rope(vec, pos):
        ang = pos * freqs
        cos, sin = np.concatenate([np.cos(ang)] * 2), np.concatenate([np.sin(ang)] * 2)
        half = r // 2
        return vec * cos + np.concatenate([-vec[..., half:], vec[..., :half]], -1) * sin

    out = np.zeros((len(xs), h, dv))
    for b in range(len(xs)):
        k_rope = np.stack([rope(c[b, p, dkv:], p) for p in range(L + 1)])  # (L+1, r)
        for head in range(h):
            qr = rope(q[b, head, nope:], L)
            s = (k_nope[b, :, head] @ q[b, head, :nope] + k_rope @ qr) / math.sqrt(nope + r)
            p = np.exp(s - s.max())
            out[b, head] = (p / p.sum()) @ v[b, :, head]
    y = out.reshape(len(xs), 1, h * dv) @ f(cfg["wo_weight"]).T
    return y, c


@pytest.mark.parametrize("case", specs.MLA_CPU_TESTS[:2], ids=lambda c: c.name)
def test_mla_reference_matches_explicit_attention(case):
    data = mla.generate_input(case, "cpu")
    before = data[2].clone()
    out, cache = mla.reference(data)
    y, c = _mla_numpy(data)
    assert torch.equal(data[2], before)  # input cache not modified
    assert out.shape == (case.batch, 1, case.dim) and out.dtype == torch.bfloat16
    # the reference rounds once to bf16 at the end (relative step 2^-8)
    np.testing.assert_allclose(out.double().numpy(), y, rtol=2**-7, atol=1e-3)
    np.testing.assert_array_equal(cache[:, : case.prefill + 1].double().numpy(), c)
    assert torch.count_nonzero(cache[:, case.prefill + 1 :]) == 0


# ----------------------------------------------------------------------------- tolerance
def test_tolerance_accepts_within_and_rejects_outside_the_bound():
    ref = torch.tensor([[1.0, -2.0], [0.0, 100.0]])
    bound = 2e-2 + 2e-2 * ref.abs()
    assert tolerance.compare(ref + 0.99 * bound, ref, 2e-2, 2e-2)["ok"]
    bad = ref.clone()
    bad[1, 1] += 1.01 * float(bound[1, 1])
    verdict = tolerance.compare(bad, ref, 2e-2, 2e-2)
    assert not verdict["ok"] and verdict["n_bad"] == 1 and "[1, 1]" in verdict["message"]


def test_tolerance_nonfinite_positions_must_match():
    ref = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert tolerance.compare(ref.clone(), ref, 1e-2, 1e-2)["ok"]
    for i, value in [(0, float("nan")), (1, 0.0), (2, -float("inf")), (3, float("nan")), (0, float("inf"))]:
        out = ref.clone()
        out[i] = value
        verdict = tolerance.compare(out, ref, 1e-2, 1e-2)
        assert not verdict["ok"] and "same positions" in verdict["message"], (i, value)


def test_tolerance_rejects_shape_dtype_and_subclass():
    ref = torch.zeros(2, 3)
    assert "shape (3, 2)" in tolerance.compare(torch.zeros(3, 2), ref, 1, 1)["message"]
    assert "floating dtype" in tolerance.compare(torch.zeros(2, 3, dtype=torch.int32), ref, 1, 1)["message"]
    assert "plain torch.Tensor" in tolerance.compare(np.zeros((2, 3)), ref, 1, 1)["message"]

    class Lazy(torch.Tensor):
        pass

    assert "subclass" in tolerance.compare(torch.zeros(2, 3).as_subclass(Lazy), ref, 1, 1)["message"]


# ----------------------------------------------------------------------------- static checks
HACKS = {
    "reference": "from discoverygym.rewards.kernels.trimul import reference\ndef custom_kernel(data):\n    return reference(data)\n",
    "ref_name": "def custom_kernel(data):\n    return ref_kernel(data)\n",
    "patch": "import torch\ntorch.cuda.synchronize = lambda: None\ndef custom_kernel(data):\n    return data[0]\n",
    "tf32": "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\ndef custom_kernel(data):\n    return data[0]\n",
    "timer": "import time\ndef custom_kernel(data):\n    return data[0]\n",
    "event": "import torch\ndef custom_kernel(data):\n    e = torch.cuda.Event()\n    return data[0]\n",
    "stream": "import torch\ndef custom_kernel(data):\n    with torch.cuda.stream(torch.cuda.Stream()):\n        return data[0]\n",
    "cache": "import functools\n@functools.lru_cache\ndef custom_kernel(data):\n    return data[0]\n",
    "global": "OUT = None\ndef custom_kernel(data):\n    global OUT\n    OUT = data[0]\n    return OUT\n",
    "subclass": "import torch\nclass T(torch.Tensor):\n    pass\ndef custom_kernel(data):\n    return data[0]\n",
    "dispatch": "class T:\n    def __torch_dispatch__(self):\n        pass\ndef custom_kernel(data):\n    return data[0]\n",
    "fallback": "import torch\ndef custom_kernel(data):\n    try:\n        return fast(data)\n    except Exception:\n        return slow(data)\n",
    "exec": "def custom_kernel(data):\n    return eval('data[0]')\n",
    "setattr": "import torch\nsetattr(torch, 'matmul', None)\ndef custom_kernel(data):\n    return data[0]\n",
    "no_entry": "def kernel(data):\n    return data[0]\n",
    # Patching through an alias of a torch object, and reaching __import__ via attrgetter
    "alias_patch": "import torch\nT = torch.Tensor\nT.__le__ = lambda a, b: a\ndef custom_kernel(data):\n    return data[0]\n",
    "type_patch": "import torch\ndef custom_kernel(data):\n    type(data[0]).add = None\n    return data[0]\n",
    "attrgetter": "import operator\nG = operator.attrgetter('__glob' + 'als__')\ndef custom_kernel(data):\n    return data[0]\n",
    "methodcaller": "from operator import methodcaller\ndef custom_kernel(data):\n    return data[0]\n",
    "dunder": "def custom_kernel(data):\n    return data[0].__class__.__mro__\n",
    "dunder_string": "def custom_kernel(data):\n    key = '__builtins__'\n    return data[0]\n",
    "item_patch": "import torch\ntorch.ops.table['matmul'] = None\ndef custom_kernel(data):\n    return data[0]\n",
    "syntax": "def custom_kernel(data) return 1\n",
}
EXPECTED_WORDS = {
    "reference": "import from",
    "ref_name": "reference",
    "patch": "patches",
    "tf32": "patches",
    "timer": "import of `time`",
    "event": "timing",
    "stream": "streams",
    "cache": "cached",
    "global": "cached",
    "subclass": "subclass",
    "dispatch": "subclass",
    "fallback": "fall back",
    "exec": "eval",
    "setattr": "setattr",
    "no_entry": "custom_kernel",
    "alias_patch": "patches",
    "type_patch": "patches",
    "attrgetter": "attrgetter",
    "methodcaller": "methodcaller",
    "dunder": "not allowed in kernel programs",
    "dunder_string": "string naming",
    "item_patch": "patches",
    "syntax": "syntax error",
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_static_checks_refuse_known_hacks(name):
    found = violations(HACKS[name])
    assert any(EXPECTED_WORDS[name] in msg for msg in found), found
    with pytest.raises(InvalidSolution, match="static check failed"):
        check_program(HACKS[name])


@pytest.mark.parametrize("env_id", ["TriMul-H100-v0", "MLADecode-H200-v0"])
def test_static_checks_accept_the_baselines(env_id):
    task = gym.make(env_id).unwrapped.task
    assert violations(task.initial_program()) == []


def test_static_checks_accept_the_triton_example():
    from discoverygym.envs.kernels import _EXAMPLES

    assert violations((_EXAMPLES / "trimul_triton.py").read_text()) == []


# ----------------------------------------------------------------------------- timing rule
def test_summarise_matches_statistics_module():
    times = [101.0, 99.5, 100.25, 98.0, 102.5]
    s = timing.summarise(times)
    assert s["mean_us"] == pytest.approx(statistics.fmean(times))
    assert s["std_us"] == pytest.approx(statistics.stdev(times))
    assert s["stderr_us"] == pytest.approx(statistics.stdev(times) / math.sqrt(5))
    with pytest.raises(ValueError):
        timing.summarise([])


def test_stopping_rule():
    steady = [100.0, 100.0001, 99.9999]
    assert timing.should_stop(steady, 0.1)  # stderr/mean far below 0.1 %
    noisy = [100.0, 150.0, 60.0]
    assert not timing.should_stop(noisy, 0.1)
    assert timing.should_stop(noisy, 10.0, budget_s=10.0)  # budget spent
    assert timing.should_stop([100.0, 150.0] * 50, 0.1)  # 100 repeats
    assert not timing.should_stop([], 100.0)  # at least one call
    assert not timing.should_stop([100.0, 100.0], 0.1)  # below min_repeats


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given without a GPU")
def test_timing_without_gpu_names_what_is_missing():
    from discoverygym.errors import BackendUnavailable

    with pytest.raises(BackendUnavailable, match="torch.cuda.is_available"):
        timing.time_kernel(lambda d: d, None)
    with pytest.raises(BackendUnavailable, match="device='cpu'"):
        timing.require_gpu("cpu")


# ----------------------------------------------------------------------------- env surface
ENV_IDS = [f"TriMul-{g}-v0" for g in ("H100", "A100", "H200", "B200", "MI300X")] + [
    "MLADecode-H200-v0",
    "MLADecode-MI300X-v0",
]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_reset_render_without_gpu(env_id):
    assert gym.spec(env_id).nondeterministic
    env = gym.make(env_id, render_mode="rgb_array", device="cpu")
    obs, info = env.reset(seed=0)
    assert info["score"] is None and not info["valid"] and "custom_kernel" in info["state"].code
    assert "custom_kernel" in obs["prompt"] and env_id.split("-")[1] in obs["prompt"]
    frame = env.render()
    assert frame.shape == (256, 256, 3) and frame.dtype == np.uint8
    ansi = gym.make(env_id, render_mode="ansi", device="cpu")
    ansi.reset(seed=0)
    assert "not scored" in ansi.render()


def test_records_per_gpu_follow_the_problem_notes():
    # figures from docs/problems.md (TTT-Discover / SimpleTES / GPU MODE), lower is better
    assert make_trimul("A100").sota["value"] == 2198.2 and make_trimul("A100").sota["best_human_us"] == 4531.5
    h100 = make_trimul("H100").sota
    assert (h100["ttt_us"], h100["best_human_us"], h100["tes_us"], h100["value"]) == (
        1161.2,
        1371.1,
        1122.0,
        1122.0,
    )
    assert make_trimul("H200").sota["value"] == 1020.0
    assert make_trimul("B200").sota["value"] == 910.8
    assert (
        make_trimul("MI300X").sota["value"] == 1555.7
        and make_trimul("MI300X").sota["best_human_us"] == 2515.8
    )
    mi = make_mla_decode("MI300X").sota
    assert mi["value"] == 1653.8 and mi["ttt_us"] == 1669.1 and "human" in mi["source"]
    assert math.isnan(make_mla_decode("H200").sota["value"])


def test_reward_is_3000_over_microseconds():
    task = make_trimul("H100")
    assert task.reward(1500.0) == pytest.approx(2.0) and task.failure_reward == 0.0
    assert not task.evaluate_initial and task.direction == "min"


def test_factory_validates_options():
    with pytest.raises(ValueError, match="target GPU"):
        make_trimul("V100")
    with pytest.raises(ValueError, match="device"):
        make_trimul("H100", device="tpu")
    with pytest.raises(ValueError, match="cases_dir"):
        make_trimul("H100", cases_dir="/tmp")
    with pytest.raises(ValueError, match="n_cases"):
        make_mla_decode("H200", n_cases=0)
    assert len(make_trimul("H100", device="cpu", n_cases=2).test_cases()) == 2
    assert len(make_trimul("H100", device="cuda").test_cases()) == 18
    assert len(make_trimul("H100", device="cuda").timed_cases()) == 7


def test_target_mismatch_warning_and_report_rows():
    task = make_trimul("H100")
    assert task.mismatch_warning("NVIDIA H100 80GB HBM3") is None
    warn = task.mismatch_warning("NVIDIA H200")
    assert "NVIDIA H200" in warn and "H100" in warn
    assert make_mla_decode("MI300X").mismatch_warning("AMD Instinct MI300X") is None
    means = [100.0, 400.0]
    md = {
        "gpu_name": "NVIDIA H200",
        "platform": "cuda 12.8",
        "geomean_us": 200.0,
        "case_names": ["a", "b"],
        "case_means_us": means,
        "case_stderr_us": [0.1, 0.2],
        "case_repeats": [100, 50],
        "target_mismatch": warn,
        "case_scores": means,
    }
    rows = dict(task.report(State(None, 200.0, 15.0, True, metadata=md)))
    assert "200.00 μs" in rows["geometric mean"] and rows["b"].startswith("400.00 ± 0.20")
    assert rows["warning"] == warn and "NVIDIA H200" in rows["GPU"]


def test_import_discoverygym_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys, gymnasium as gym, discoverygym; env = gym.make('TriMul-B200-v0'); env.reset(seed=0);"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert isinstance(make_trimul(), TriMulTask) and isinstance(make_mla_decode(), MLADecodeTask)


def test_static_checks_leave_ordinary_kernel_code_alone():
    # torch.compile, variables named like builtins/modules, a module's own .modules() are fine
    source = (
        "import torch\nimport torch.nn.functional as F\nfast = torch.compile(F.gelu)\n"
        "def custom_kernel(data):\n    input, signal, io = data[0], 1, 2\n"
        "    n = len(list(torch.nn.Linear(2, 2).modules()))\n    return fast(input) * n\n"
    )
    assert violations(source) == []


@pytest.mark.parametrize(
    "source",
    [
        "from torch import sys\ndef custom_kernel(data):\n    return data[0]\n",
        "import torch\ndef custom_kernel(data):\n    torch.os.system('true')\n    return data[0]\n",
        "import torch\ndef custom_kernel(data):\n    return custom_kernel.__globals__\n",
    ],
    ids=["from-torch-import-sys", "torch.os", "__globals__"],
)
def test_static_checks_refuse_modules_reexported_by_torch(source):
    assert violations(source)


# QA3 (static/probe.py): file I/O, operator registration, compiled extensions, storage swaps,
# class creation and format strings reaching attributes.
_QA3_REFUSED = {
    "type3_subclass": "S = type('S', (torch.Tensor,), {})",
    "np_file_write": "np.zeros(3).tofile('/tmp/x')",
    "np_fromfile": "x = np.fromfile('/etc/hostname')",
    "np_loadtxt_read": "x = np.loadtxt('/etc/hostname', dtype=str)",
    "np_genfromtxt": "x = np.genfromtxt('/etc/hostname')",
    "np_savetxt": "np.savetxt('/tmp/x.py', np.zeros(1), header='import os')",
    "np_save": "np.save('/tmp/x', np.zeros(1))",
    "np_load_alias": "import numpy as xx\ny = xx.load('/tmp/x.npy')",
    "np_load_import": "from numpy import load",
    "np_savez": "np.savez('/tmp/x', a=np.zeros(1))",
    "np_memmap": "m = np.memmap('/tmp/x', mode='w+', shape=(1,))",
    "np_lib_format": "np.lib.format.write_array",
    "datasource_open": "f = np.lib.npyio.DataSource(None).open('/tmp/y', 'w')",
    "builtin_open": "f = open('/tmp/x', 'w')",
    "torch_library_impl": "lib = torch.library.Library('aten', 'IMPL')",
    "torch_ops": "f = torch.ops.aten.add",
    "torch_save": "torch.save(1, '/tmp/z')",
    "torch_load": "x = torch.load('/tmp/z')",
    "cpp_extension": "from torch.utils import cpp_extension",
    "load_inline": "m = torch.utils.cpp_extension.load_inline('m', 'int f(){return 0;}')",
    "swap_tensors": "torch.utils.swap_tensors(a, b)",
    "tensor_set": "t = torch.zeros(1)\nt.set_(torch.ones(1))",
    "torch_package": "x = torch.package.PackageImporter",
    "format_attr": "s = '{0.real}'.format(1)",
    "format_item": "s = '{0[a]}'.format(dict(a=1))",
    "format_computed": "f = 'x'\ns = f.format(1)",
    "format_map": "s = '{x}'.format_map(dict(x=1))",
}


@pytest.mark.parametrize("name", sorted(_QA3_REFUSED))
def test_static_checks_refuse_file_io_and_extension_escapes(name):
    head = "import torch\nimport numpy as np\n"
    found = violations(head + _QA3_REFUSED[name] + "\ndef custom_kernel(data):\n    return data[0]\n")
    assert found and "not allowed" in found[0], found


def test_static_checks_keep_triton_loads_and_plain_format():
    source = (
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(p):\n    x = tl.load(p)\n"
        "    tl.store(p, x)\n\nMSG = 'n={} {:.2f}'.format(1, 2.0)\n\ndef custom_kernel(data):\n    return data[0]\n"
    )
    assert violations(source) == []
