"""Issue 51: the train configuration imports no torch, so the command line builds its flags, help
and checks from it (one source) before torch loads."""

from __future__ import annotations

import subprocess
import sys


def test_the_config_and_the_train_and_compare_commands_import_no_torch():
    code = ("import sys; import discoverygym.agents.config, discoverygym.cli.train, discoverygym.cli.compare; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
