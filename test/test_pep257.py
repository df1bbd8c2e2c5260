# Copyright 2015 Open Source Robotics Foundation, Inc.
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

from pathlib import Path

from ament_pep257.main import main
import pytest

REPO = Path(__file__).resolve().parents[1]
# Local outputs (.gitignore) pydocstyle would scan: it skips only folders starting with . or _.
NOT_SOURCES = ['build', 'install', 'log', 'out', 'demo-output']


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257(monkeypatch):
    monkeypatch.chdir(REPO)
    rc = main(argv=['.', 'test', '--exclude', *NOT_SOURCES])
    assert rc == 0, 'Found code style errors / warnings'
