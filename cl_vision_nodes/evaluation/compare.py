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

"""
`cl-vision eval --compare A B`: two eval folders side by side in one Markdown table.

Two runs of the same bag with two parameter sets, two devices or two versions differ in a few
figures among many; the table puts each figure of report.json next to its counterpart with the
difference B - A (and the change relative to A), node by node: frames answered, latency p50 and
p95, throughput, the time per stage when the report has it, then every accuracy and quality
figure. A figure only one run has shows n/a on the other side. The table is printed and written
to a file, so it can go into a pull request or a log as it is.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator

from cl_vision_nodes.errors import DataFormatError

REPORT = 'report.json'
COMPARE_FILE = 'compare.md'
SECTIONS = ('accuracy', 'quality')
"""The report's per-node tables of figures, each a flat mapping besides its per_frame rows."""


def load_report(folder: Path) -> dict[str, Any]:
    """Read an eval folder's report.json; DataFormatError in one line if it is not one."""
    path = folder / REPORT
    if not folder.is_dir():
        raise DataFormatError(f'{folder}: no such folder (expected a cl-vision eval --out folder)')
    if not path.is_file():
        raise DataFormatError(f'{folder}: no {REPORT} (not a cl-vision eval output folder)')
    try:
        report = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataFormatError(f'{path}: not JSON ({exc})') from None
    if not isinstance(report, dict) or not isinstance(report.get('nodes'), dict):
        raise DataFormatError(f'{path}: no "nodes" table, not a cl-vision eval report')
    return report


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fmt(value: Any, digits: int) -> str:
    if value is None:
        return 'n/a'
    if isinstance(value, float):
        return f'{value:.{digits}f}' if math.isfinite(value) else 'n/a'
    return str(value)


def _difference(a: Any, b: Any, digits: int) -> str:
    """Return B - A with its sign, and relative to A when A is not 0; blank if either is absent."""
    if not (_number(a) and _number(b)) or not (math.isfinite(a) and math.isfinite(b)):
        return ''
    delta = b - a
    text = f'{delta:+.{digits}f}' if isinstance(delta, float) else f'{delta:+d}'
    return text + (f' ({delta / abs(a):+.1%})' if a else '')


def _stages(node: dict[str, Any]) -> dict[str, Any]:
    """Return the node's own mean ms per stage (its /diagnostics), if the report has them."""
    return (node.get('stages') or {}).get('stage_ms') or {}


def _figures(node: dict[str, Any]) -> Iterator[tuple[str, Any, int]]:
    """Yield (figure, value, digits) of one node's report, in table order."""
    latency = node.get('latency_ms') or {}
    yield 'frames answered', node.get('answered'), 0
    yield 'frames dropped', node.get('dropped'), 0
    yield 'latency p50 ms', latency.get('p50'), 1
    yield 'latency p95 ms', latency.get('p95'), 1
    yield 'throughput fps', node.get('throughput_fps'), 2
    for stage, value in _stages(node).items():
        yield f'stage {stage} ms', value, 2
    for section in SECTIONS:
        for key, value in (node.get(section) or {}).items():
            if _number(value) or value is None:
                yield f'{section}: {key}', value, 3


def _rows(a: dict[str, Any], b: dict[str, Any]) -> Iterator[tuple[str, str, Any, Any, int]]:
    """Yield (node, figure, value in A, value in B, digits) over the union of both reports."""
    yield 'run', 'device', a.get('device'), b.get('device'), 0
    yield 'run', 'frames sent', a.get('frames_sent'), b.get('frames_sent'), 0
    yield 'run', 'frames/s', a.get('wall_fps'), b.get('wall_fps'), 2
    for key in [*a['nodes'], *(k for k in b['nodes'] if k not in a['nodes'])]:
        first = {figure: (value, d) for figure, value, d in _figures(a['nodes'].get(key, {}))}
        second = {figure: (value, d) for figure, value, d in _figures(b['nodes'].get(key, {}))}
        for figure in {**first, **second}:  # A's figures in order, then those only B has
            digits = (first.get(figure) or second[figure])[1]
            yield (key, figure, first.get(figure, (None,))[0], second.get(figure, (None,))[0],
                   digits)


def compare_table(a: dict[str, Any], b: dict[str, Any], name_a: str, name_b: str) -> str:
    """Return the Markdown table of two reports: each figure of A, of B, and B - A."""
    lines = [f'# cl-vision eval: {name_a} (A) vs {name_b} (B)', '',
             f"A: bag `{a.get('bag')}`; B: bag `{b.get('bag')}`. Difference: B - A "
             '(relative to A).', '',
             f'| node | figure | A: {name_a} | B: {name_b} | B - A |', '|---|---|---|---|---|']
    for node, figure, value_a, value_b, digits in _rows(a, b):
        lines.append(f'| {node} | {figure} | {_fmt(value_a, digits)} | {_fmt(value_b, digits)} '
                     f'| {_difference(value_a, value_b, digits)} |')
    return '\n'.join(lines) + '\n'


def run_compare(folder_a: Path, folder_b: Path, out: Path | None = None) -> Path:
    """
    Print the table of two eval folders and write it to ``out``/compare.md.

    ``out`` defaults to B's folder. Returns the file written.
    """
    table = compare_table(load_report(folder_a), load_report(folder_b), str(folder_a),
                          str(folder_b))
    target = (out or folder_b) / COMPARE_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(table)
    print(table, end='')
    return target
