"""SearchConfig checks: every value error is raised by the config itself, before a run starts."""

from __future__ import annotations

import pytest

from discoverygym.cli import search as cli
from discoverygym.search.config import SearchConfig, check_env_id

ENV = "CirclePacking-26-v0"


class CodeOnly:
    """A policy object that proposes programs only."""

    name = "code-only"
    action_modes = ("code",)

    def sample(self, contexts, n, rng):
        raise AssertionError("never called")


def test_unknown_env_id_message_is_the_one_the_cli_prints(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"^unknown env 'Nope-v0'; run `discoverygym list`$"):
        check_env_id("Nope-v0")
    check_env_id(ENV)
    check_env_id("AHC039-v0")  # a program env is known too
    rc = cli.main(["Nope-v0", "--run-dir", str(tmp_path / "r")])
    assert rc == 2
    assert (
        capsys.readouterr().err.strip()
        == "discoverygym search: error: unknown env 'Nope-v0'; run `discoverygym list`"
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"C": 0}, "C must be an integer >= 1, got 0"),
        ({"K": 2.5}, "K must be an integer >= 1, got 2.5"),
        ({"backpressure": True}, "backpressure must be an integer >= 1, got True"),
        ({"inspirations": 0}, "inspirations must be an integer >= 1, got 0"),
        ({"action_mode": "words"}, "action_mode must be 'construction' or 'code', got 'words'"),
        ({"env_kwargs": [1]}, "env_kwargs must be a JSON object, got [1]"),
        ({"env_kwargs": {"n_cases": 3}}, "takes no option 'n_cases'"),
        ({"selector": "best"}, "unknown selector 'best'"),
        ({"selector": "epsilon", "selector_kwargs": {"epsilon": 2.0}}, "epsilon must be in [0, 1], got 2.0"),
        ({"policy": "nope"}, "unknown policy 'nope'"),
    ],
)
def test_validate_refuses_impossible_values(changes, message):
    with pytest.raises(ValueError) as info:
        SearchConfig(ENV, **changes).validate()
    assert message in str(info.value)


def test_a_policy_object_is_checked_instead_of_the_name():
    cfg = SearchConfig(ENV, policy="not-registered")
    cfg.validate(check_policy=False)  # the name is not looked up
    with pytest.raises(ValueError, match="unknown policy 'not-registered'"):
        cfg.validate()
    with pytest.raises(ValueError, match="cannot run with action_mode='construction'"):
        cfg.validate(policy=CodeOnly())
    SearchConfig("AHC039-v0", policy="not-registered", action_mode="code").validate(policy=CodeOnly())
