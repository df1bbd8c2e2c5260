# Copyright 2026 cl_vision_nodes maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.


"""Running `cl-vision` as users do, for the tests of every subcommand."""
from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

REPO = Path(__file__).resolve().parents[1]


def cl_vision(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``cl-vision args`` from this checkout, with ``env`` added to the environment."""
    return subprocess.run([sys.executable, '-m', 'cl_vision_nodes.tools.cli', *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def assert_one_line_error(result: subprocess.CompletedProcess, words: str) -> None:
    """Check the CLI contract for bad input: exit code 2 and one line on stderr that says why."""
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr
