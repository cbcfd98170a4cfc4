"""One TensorBoard schema (discoverygym.tensorboard): train and search runs share ``score/best``."""

from __future__ import annotations

import numpy as np
import pytest

from discoverygym.tensorboard import RunWriter, read_scalars, read_tags, titled

ENV = "CirclePacking-26-v0"


def _tensorboard_scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    """What TensorBoard's own reader (the plugin accumulator of the data provider) sees as scalars."""
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator
    from tensorboard.util.tensor_util import make_ndarray

    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        if acc.SummaryMetadata(tag).plugin_data.plugin_name == "scalars":
            out[tag] = [(e.step, make_ndarray(e.tensor_proto).item()) for e in acc.Tensors(tag)]
    return out


def test_a_train_run_and_a_search_run_share_score_best_and_the_record_line(tmp_path):
    pytest.importorskip("torch", reason="the trainer needs torch")
    from discoverygym.agents.trainer import TrainConfig, Trainer
    from discoverygym.envs.registry import ENVS
    from discoverygym.search.evolution import EvolutionarySearch, SearchConfig

    train = Trainer(TrainConfig(env_id=ENV, steps=2, groups=2, group_size=4, seed=0), tmp_path / "train").run()
    search = EvolutionarySearch(SearchConfig(ENV, selector="rpucg", C=2, L=2, K=2, seed=0), tmp_path / "search",
                                executor="inline", tensorboard=True).run()
    record = ENVS[ENV].sota["value"]
    for run, best in (("train", train.best.score), ("search", search.best.score)):
        scalars = _tensorboard_scalars(tmp_path / run)
        assert "score/best" in scalars, run
        assert scalars["score/best"][-1][1] == pytest.approx(best, rel=1e-6), run
        assert [v for _, v in scalars["score/record"]] == pytest.approx([record] * len(scalars["score/record"])), run
        assert scalars["score/gap"][-1][1] == pytest.approx(best - record, rel=1e-5), run  # Direction.gap
        assert "cost/evaluations" in scalars, run
    # search steps are evaluations (cost/evaluations = step); train steps are training steps
    assert all(step == v for step, v in scalars["cost/evaluations"])
    assert _tensorboard_scalars(tmp_path / "train")["cost/evaluations"] == [(1, 8.0), (2, 16.0)]
    train_kinds = read_tags(tmp_path / "train")
    assert train_kinds["beta"] == "histogram" and train_kinds["best_construction"] == "image"


def test_scalars_skip_missing_values_and_double_precision_keeps_float64(tmp_path):
    w = RunWriter(tmp_path / "f32", record=2.6359830849)
    w.scalars({"score/best": 2.6359830849123, "reward/mean": None, "perf/x": float("nan"), "eval/a": 1}, step=3)
    w.close()
    got = read_scalars(tmp_path / "f32")
    assert got["score/best"][0][:2] == (3, pytest.approx(2.6359830849123, rel=1e-7))
    assert got["score/gap"][0][1] == pytest.approx(2.6359830849123 - 2.6359830849, rel=1e-6)  # the digits kept
    assert got["eval/a"][0][1] == 1.0 and "reward/mean" not in got and "perf/x" not in got
    assert _tensorboard_scalars(tmp_path / "f32")["score/best"][0][0] == 3  # the default form TensorBoard shows
    w = RunWriter(tmp_path / "f64", record=3.0, direction="min", double_precision=True)
    w.scalars({"score/best": 2.6359830849123}, step=1)
    w.close()
    got = read_scalars(tmp_path / "f64")
    assert got["score/best"][0][1] == 2.6359830849123  # exact: float32 would give 2.6359830
    assert got["score/gap"][0][1] == 2.6359830849123 - 3.0  # best - record whatever the direction
    assert _tensorboard_scalars(tmp_path / "f64")["score/best"] == [(1, 2.6359830849123)]


def test_the_image_carries_its_score_as_a_title():
    picture = np.zeros((32, 48, 3), dtype=np.uint8)
    out = titled(picture, "score 1.5")
    assert out.shape == (48, 48, 3) and out.dtype == np.uint8
    strip = out[:16]
    assert (strip == 255).any() and (strip < 128).any()  # white strip with dark text on it
    assert (out[16:] == 0).all()  # the picture itself is untouched below


def test_two_writers_opened_within_one_second_keep_both_files(tmp_path):
    """A crash then an immediate resume opens a second writer on the run directory within the same second;
    tensorboardX names files by the second and the host, so without a suffix the second truncates the first
    (what made IRFT's crash-and-resume test lose its first run's tags on a fast CI machine)."""
    first = RunWriter(tmp_path)
    first.scalar("before/crash", 1.0, 0)
    first.close()
    second = RunWriter(tmp_path)
    second.scalar("after/resume", 2.0, 1)
    second.close()
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 2
    assert {"before/crash", "after/resume"} <= set(read_tags(tmp_path))
