"""One source of defaults: every ``discoverygym search`` flag's default, and the default its help
shows, is :class:`SearchConfig`'s field default (as ``tests/agents/test_config_defaults.py`` holds
for ``train``)."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields

import pytest

from discoverygym.cli import build_parser
from discoverygym.cli import search as cli
from discoverygym.envs.registry import PROGRAM_TASKS
from discoverygym.search.config import SearchConfig

CONSTRUCTION = "CirclePacking-26-v0"
PROGRAM = "AHC039-v0"

FIELDS = {f.name: f for f in fields(SearchConfig)}


def _default(name: str):
    f = FIELDS[name]
    return f.default_factory() if f.default is MISSING else f.default


def _args(env_id: str, *argv: str, run_dir: str = "runs/x"):
    return build_parser().parse_args(["search", env_id, "--run-dir", run_dir, *argv])


def _search_actions():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    parser = sub.choices["search"]
    return {a.dest: a for a in parser._actions if a.dest in FIELDS}


def test_every_search_parameter_is_a_config_field():
    dests = [dest for _, dest, _, _ in cli._PARAMS]
    assert set(dests) <= set(FIELDS)
    assert set(dests) == set(_search_actions()) - {"env_id"}  # env_id: the positional argument


@pytest.mark.parametrize("dest", [dest for _, dest, _, _ in cli._PARAMS])
def test_each_flag_defaults_to_the_config_field(dest):
    """Not given, a flag leaves the field at SearchConfig's default (argparse keeps None, so that
    --resume can tell a given flag from a default)."""
    args = _args(CONSTRUCTION)
    assert getattr(args, dest) is None
    config = cli._config_from_flags(args)
    assert getattr(config, dest) == _default(dest)


def test_no_flags_is_the_python_default_config():
    assert cli._config_from_flags(_args(CONSTRUCTION)) == SearchConfig(env_id=CONSTRUCTION)


def test_a_program_env_defaults_to_code_mode():
    assert PROGRAM in PROGRAM_TASKS
    assert cli._config_from_flags(_args(PROGRAM)) == SearchConfig(env_id=PROGRAM, action_mode="code")
    given = cli._config_from_flags(_args(PROGRAM, "--action-mode", "construction"))
    assert given.action_mode == "construction"  # a given flag still wins (validate refuses it later)


@pytest.mark.parametrize(
    "dest", [d for d in FIELDS if d != "env_id" and not isinstance(_default(d), dict) and _default(d) is not None]
)
def test_help_shows_the_config_default(dest):
    """A field with a plain default that has a flag names that default in its help."""
    actions = _search_actions()
    if dest not in actions:
        pytest.skip(f"{dest} has no flag")
    shown = re.findall(r"default:?\s+(?:code for a program env, else )?([^\s;),]+)", actions[dest].help)
    assert shown == [str(_default(dest))], actions[dest].help
