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
The combined report of an eval over a folder of bags: a row per bag and the totals.

Each bag keeps its own eval folder (report.md, pictures, recorded bag); the combined report.json
and report.md take from each bag's report.json the figures one compares across recordings: per
node frames due, answered and dropped, latency mean and throughput, and every accuracy and
quality figure. Totals add the counts and weight the rest by what they are means over: latency
by frames answered (throughput is then answered frames over the summed latencies, as for one
bag), accuracy and quality by frames scored.
"""
from __future__ import annotations

from dataclasses import dataclass
import json
from pathlib import Path
from typing import Any

from cl_vision_nodes.evaluation.compare import SECTIONS
from cl_vision_nodes.evaluation.report import ACCURACY_COLUMNS, fmt, json_ready, QUALITY_COLUMNS

COUNTS = ('frames_due', 'answered', 'dropped')
COLUMNS = {'accuracy': ACCURACY_COLUMNS, 'quality': QUALITY_COLUMNS}


@dataclass
class BagResult:
    """One bag of the folder: its name inside the folder, its report, or why it has none."""

    name: str
    report: dict[str, Any] | None
    error: str | None = None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _flat(section: dict[str, Any] | None) -> dict[str, float | None]:
    """Return a section's figures without its per-frame rows."""
    return {k: v for k, v in (section or {}).items() if _number(v) or v is None}


def node_figures(node: dict[str, Any]) -> dict[str, Any]:
    """Return the figures of one node of one bag's report that the combined report keeps."""
    return {**{k: node.get(k) for k in COUNTS},
            'latency_mean_ms': (node.get('latency_ms') or {}).get('mean'),
            'throughput_fps': node.get('throughput_fps'),
            **{section: _flat(node.get(section)) for section in SECTIONS}}


def bag_row(result: BagResult) -> dict[str, Any]:
    """Return a bag's row: where its report is, its run's figures and each node's."""
    report = result.report or {}
    return {'bag': result.name, 'error': result.error,
            'report': f'{result.name}/report.md' if result.report else None,
            'frames_sent': report.get('frames_sent'), 'wall_s': report.get('wall_s'),
            'interrupted': report.get('interrupted'),
            'nodes': {key: node_figures(node) for key, node in report.get('nodes', {}).items()}}


def _weighted(pairs: list[tuple[float | None, float]]) -> float | None:
    """Return the mean of the values weighted by their weights (None where nothing counts)."""
    kept = [(v, w) for v, w in pairs if v is not None and w]
    weight = sum(w for _, w in kept)
    return sum(v * w for v, w in kept) / weight if weight else None


def _section_totals(nodes: list[dict[str, Any]], section: str) -> dict[str, Any]:
    rows = [node[section] for node in nodes]
    scored = [row.get('frames_scored') or 0 for row in rows]
    names = [k for row in rows for k in row if k != 'frames_scored']
    return {'frames_scored': sum(scored),
            **{k: _weighted([(row.get(k), n) for row, n in zip(rows, scored)])
               for k in dict.fromkeys(names)}}


def node_totals(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Return one node's figures over every bag (see the module's docstring for the weights)."""
    answered = [node['answered'] or 0 for node in nodes]
    latency = _weighted([(node['latency_mean_ms'], n) for node, n in zip(nodes, answered)])
    busy_s = latency * sum(answered) / 1e3 if latency is not None else 0.0
    return {**{k: sum(node[k] or 0 for node in nodes) for k in COUNTS},
            'latency_mean_ms': latency,
            'throughput_fps': sum(answered) / busy_s if busy_s else None,
            **{section: _section_totals(nodes, section) for section in SECTIONS}}


def combine(results: list[BagResult], folder: Path, ray: str | None) -> dict[str, Any]:
    """Return the combined report of the bags of ``folder`` (``ray``: the cluster, if one ran)."""
    rows = [bag_row(result) for result in sorted(results, key=lambda r: r.name)]
    keys = list(dict.fromkeys(key for row in rows for key in row['nodes']))
    return {'folder': str(folder), 'ray': ray, 'bags': rows,
            'totals': {'bags': len(rows), 'failed': sum(row['error'] is not None for row in rows),
                       'frames_sent': sum(row['frames_sent'] or 0 for row in rows),
                       'nodes': {key: node_totals([row['nodes'][key] for row in rows
                                                   if key in row['nodes']]) for key in keys}}}


def _node_table(key: str, rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    figures = [(section, name, title) for section in SECTIONS
               for name, title in COLUMNS[section][key]]
    lines = [f'### {key}', '',
             '| bag | due | answered | dropped | latency mean ms | throughput fps | '
             + ' | '.join(title for _, _, title in figures) + ' |',
             '|---|---|---|---|---|---|' + '---|' * len(figures)]
    for name, node in rows:
        lines.append(f"| {name} | {node['frames_due']} | {node['answered']} | {node['dropped']} | "
                     f"{fmt(node['latency_mean_ms'], 1)} | {fmt(node['throughput_fps'], 2)} | "
                     + ' | '.join(fmt(node[section].get(figure)) for section, figure, _ in figures)
                     + ' |')
    return lines + ['']


def markdown(combined: dict[str, Any]) -> str:
    totals = combined['totals']
    where = f" on the Ray cluster at `{combined['ray']}`" if combined['ray'] else ''
    lines = [f"# cl-vision eval: {totals['bags']} bags in {combined['folder']}", '',
             f"{totals['frames_sent']} frames sent{where}; {totals['failed']} bags failed. "
             "Each bag's own report: the link in its row. Totals: counts added, latency "
             'weighted by frames answered, accuracy and quality by frames scored.', '',
             '## Bags', '', '| bag | frames sent | wall s | report |', '|---|---|---|---|']
    for row in combined['bags']:
        link = f"[report]({row['report']})" if row['report'] else f"failed: {row['error']}"
        lines.append(f"| {row['bag']} | {fmt(row['frames_sent'])} | {fmt(row['wall_s'], 1)} | "
                     f'{link} |')
    lines += ['', '## Nodes', '']
    for key, total in totals['nodes'].items():
        rows = [(row['bag'], row['nodes'][key]) for row in combined['bags'] if key in row['nodes']]
        lines += _node_table(key, rows + [('**total**', total)])
    return '\n'.join(lines) + '\n'


def write_combined(out: Path, results: list[BagResult], folder: Path, ray: str | None) -> Path:
    """Write ``out``/report.json and report.md over the bags; return report.md's path."""
    combined = json_ready(combine(results, folder, ray))
    (out / 'report.json').write_text(json.dumps(combined, indent=2) + '\n')
    (out / 'report.md').write_text(markdown(combined))
    return out / 'report.md'
