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
The report of an eval run: report.json (every number), report.md (the same as tables), pictures.

Timing per node: latency from the input's publish to the DDS receive of the node's main output,
the first answer on its own (a cold device cache compiles then), then mean, p50, p95, max and
throughput (frames over the summed latencies: the rate when fed back to back) of the answers
after it; dropped frames; beside it the node's own split of a frame into stages from its
/diagnostics (receive, upload, compute, download, publish, visual...), frame-weighted means.
Accuracy where the bag has ground truth (scorers.py), quality without it (quality_scorers.py),
the latency of every output topic over the run, a strip of frames spread over the run (strip.py)
and the nodes' last pictures as published.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from cl_vision_nodes.bags.storage import Bag, topic_counts
from cl_vision_nodes.dataio.formats import write_png
from cl_vision_nodes.evaluation.frames import CAMERA_INFO_TYPE, image_array, IMAGE_TYPES
from cl_vision_nodes.evaluation.player import NodeRun
from cl_vision_nodes.evaluation.strip import StripTopics, write_strip
from cl_vision_nodes.ros.cdr import read_stamp
from cl_vision_nodes.ros.frame_stats import STAGES
import numpy as np


def json_ready(value: Any) -> Any:
    """Turn NaN and inf into null: report.json must be strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def last_messages(bag_path: Path, topics: list[str]) -> dict[str, bytes]:
    """Read back the last recorded message of each topic from the output bag."""
    present = [t for t in topics if t in topic_counts(bag_path)]
    last: dict[str, bytes] = {}
    if present:
        for msg in Bag(bag_path, present).messages():
            last[msg.topic] = msg.data
    return last


def node_pictures(bag_path: Path, out: Path, runs: list[NodeRun]) -> dict[str, str]:
    """
    Return the last frame of the nodes' own visual topics.

    flow/color, keypoints/image, disparity/color: every output after a node's main answer.
    """
    visual = [t for run in runs for t in list(run.spec.outputs)[1:]]
    pictures = {}
    for topic, data in last_messages(bag_path, visual).items():
        name = topic.strip('/').replace('/', '_') + '.png'
        write_png(out / name, image_array(data))
        pictures[f'{topic} (as published, last frame)'] = name
    return pictures


def topic_latencies(bag_path: Path, outputs: list[str]) -> dict[str, list[tuple[float, float]]]:
    """
    Return each output topic's answers as (s into the run, latency ms), from the recorded bag.

    A frame's inputs are logged at its publish time and the answers at their DDS receive time, so
    an answer's latency is its time minus that of the input with its stamp (images and camera
    infos: the homography has no header). Late answers to earlier frames count too.
    """
    recorded = topic_counts(bag_path)
    inputs = [t for t, (msgtype, _) in recorded.items() if t not in outputs
              and msgtype in (*IMAGE_TYPES, CAMERA_INFO_TYPE)]
    present = [t for t in outputs if t in recorded]
    series: dict[str, list[tuple[float, float]]] = {t: [] for t in present}
    sent: dict[int, int] = {}
    for msg in Bag(bag_path, inputs + present).messages():  # in log time: inputs first
        stamp = read_stamp(msg.data)
        if msg.topic in inputs:
            sent.setdefault(stamp, msg.timestamp_ns)
        elif stamp in sent:
            start = next(iter(sent.values()))
            series[msg.topic].append(((sent[stamp] - start) / 1e9,
                                      (msg.timestamp_ns - sent[stamp]) / 1e6))
    return series


def latency_stats(points: list[tuple[float, float]]) -> dict[str, float] | None:
    """Return p50, p95 and max of a topic's latencies (None without answers)."""
    if not points:
        return None
    values = np.array([ms for _, ms in points])
    return {'p50': float(np.percentile(values, 50)), 'p95': float(np.percentile(values, 95)),
            'max': float(values.max())}


def latency_plot(out: Path, series: dict[str, list[tuple[float, float]]]) -> str:
    """Plot every output topic's latency against the time into the run; return the file name."""
    # matplotlib here: slow to import, and choosing its backend is a process-wide side effect
    # that only drawing a plot should have.
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt
    figure, axes = plt.subplots(figsize=(10, 4), dpi=100)
    for topic, points in series.items():
        if points:
            axes.plot(*zip(*points), marker='o', markersize=3, label=topic)
    axes.set_xlabel('time into the run, s (frame published)')
    axes.set_ylabel('latency, ms (publish -> receive)')
    axes.grid(alpha=0.3)
    if any(series.values()):
        axes.legend(fontsize='small', loc='upper left', bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    figure.savefig(out / 'latency.png')
    plt.close(figure)
    return 'latency.png'


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return 'n/a'
    return f'{value:.{digits}f}' if isinstance(value, float) else str(value)


ACCURACY_COLUMNS = {
    'flow': [('epe', 'EPE px'), ('aae', 'AAE deg'), ('density', 'density')],
    'surf': [('keypoints', 'keypoints/frame'), ('repeatability', 'repeatability vs first'),
             ('matching_score', 'matching score vs first')],
    'disparity': [('d1', 'D1 (>3 px and >5 %)'), ('bad2', 'bad > 2 px'), ('density', 'density')],
}


QUALITY_COLUMNS = {
    'flow': [('photometric_error', 'photometric error'), ('unwarped_error', 'unwarped'),
             ('fb_error', 'forward-backward px'), ('fb_consistent', 'FB consistent')],
    'surf': [('keypoints', 'keypoints/frame'), ('match_rate', 'match rate'),
             ('inlier_ratio', 'inlier ratio'), ('flow_repeatability', 'repeatability (flow)')],
    'disparity': [('density', 'density'), ('lr_photometric_error', 'L-R photometric error'),
                  ('lr_error', 'L-R px'), ('lr_consistent', 'L-R consistent'),
                  ('temporal_change', 'change where static px'),
                  ('static_coverage', 'static share')],
}
QUALITY_NOTE = (
    'Without ground truth (evaluation/quality.py), per frame and averaged. Flow: grey-level '
    'error of the previous frame mapped onto the frame by the answer, beside the same without '
    "motion (unwarped), and forward-backward consistency against eval's own backward flow (same "
    'method and parameters; consistent: within 1 px). SURF, between consecutive frames: '
    'ratio-test matches a RANSAC fundamental matrix keeps, over the smaller keypoint count, and '
    "repeatability under the flow (the flow node's answer, else the library's). Disparity: "
    'share of valid pixels, grey-level error of the right image sampled at x - d, agreement with '
    "the right map of the same pair (libelas' check, within 1 px), and the change between "
    'consecutive maps where the flow is under 0.5 px.')


def _quality_lines(report: dict[str, Any]) -> list[str]:
    lines = ['## Quality without ground truth', '', QUALITY_NOTE, '']
    for key, node in report['nodes'].items():
        quality = node.get('quality') or {}
        columns = QUALITY_COLUMNS[key]
        lines += [f"### {key} ({quality.get('frames_scored', 0)} frames scored)", '',
                  '| ' + ' | '.join(title for _, title in columns) + ' |',
                  '|' + '---|' * len(columns),
                  '| ' + ' | '.join(fmt(quality.get(k)) for k, _ in columns) + ' |', '']
    return lines


def _processes(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Return the scored nodes, then the helpers (labelled), for the timing tables."""
    return list(report['nodes'].items()) + [(f'{key} (helper)', node)
                                            for key, node in report['helpers'].items()]


def _input_lines(report: dict[str, Any]) -> list[str]:
    source = report['input']
    lines = ['## Input', ''] + [f'- {line}' for line in source['cameras']]
    lines.append(f"- frames: {source['selection']}")
    if source['restamped_frames']:
        lines.append(f"- {source['restamped_frames']} frames had partner messages re-stamped to "
                     "the left image's stamp (camera infos, or a right image stamped apart)")
    return lines + ['']


def _stage_lines(report: dict[str, Any]) -> list[str]:
    """Return the table of the nodes' own per-stage timing beside eval's DDS latency."""
    timed = [(key, node) for key, node in _processes(report) if node.get('stages')]
    if not timed:
        return ['## Where the time goes', '', 'No /diagnostics from the nodes (diagnostics_period '
                '0 or no frame answered).', '']
    found = {stage for _, node in timed for stage in node['stages']['stage_ms']}
    stages = [s for s in STAGES if s in found] + sorted(found - set(STAGES))
    lines = ['## Where the time goes', '',
             "Each node's own split of a frame (its /diagnostics, ms per frame, frame-weighted "
             'means over the run; receive runs from the publish to the callback) beside the '
             'latency eval measures to the DDS receive of its main answer.', '',
             '| node | frames | ' + ' | '.join(stages) + ' | node latency mean | eval latency '
             'mean |', '|---|---|' + '---|' * (len(stages) + 2)]
    for key, node in timed:
        split = node['stages']
        lines.append(f"| {key} | {split['frames']} | "
                     + ' | '.join(fmt(split['stage_ms'].get(s), 2) for s in stages)
                     + f" | {fmt(split['node_latency_mean_ms'], 2)} | "
                     f"{fmt((node['latency_ms'] or {}).get('mean'), 2)} |")
    return lines + ['']


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# cl-vision eval: {report['bag']}", '',
             f"{report['frames_sent']} frames sent in lockstep in {report['wall_s']:.1f} s "
             f"({fmt(report['wall_fps'], 2)} frames/s), device `{report['device']}`, ROS domain "
             f"{report['domain_id']}, per-frame timeout {report['timeout_s']:g} s"
             + (', **interrupted**' if report['interrupted'] else '') + '.', '']
    lines += _input_lines(report)
    lines += ['## Timing', '',
              '| node | due | answered | dropped | first frame ms | latency mean ms | p50 | p95 | '
              'max | throughput fps |', '|---|---|---|---|---|---|---|---|---|---|']
    for key, node in _processes(report):
        lat = node['latency_ms'] or {}
        lines.append(f"| {key} | {node['frames_due']} | {node['answered']} | {node['dropped']} | "
                     f"{fmt(node.get('first_latency_ms'), 1)} | "
                     + ' | '.join(fmt(lat.get(k), 1) for k in ('mean', 'p50', 'p95', 'max'))
                     + f" | {fmt(node['throughput_fps'], 2)} |")
    lines += ['', "Latency: input publish to DDS receive of the node's main output. First frame: "
              "the node's first answer (its kernels' first runs), apart from the latency and "
              'throughput of the answers after it. Throughput: those answers over their summed '
              'latencies (the rate when fed back to back). '
              'Dropped: due frames without an answer within the timeout.', '',
              '![latency of every output topic over the run](latency.png)', '']
    lines += _stage_lines(report)
    lines += ['## Messages received', '', '| topic | type | received | expected | latency p50 ms '
              '| p95 | max |', '|---|---|---|---|---|---|---|']
    for topic, row in report['topics'].items():
        lat = row.get('latency_ms') or {}
        lines.append(f"| `{topic}` | {row['type']} | {row['received']} | {row['expected']} | "
                     + ' | '.join(fmt(lat.get(k), 1) for k in ('p50', 'p95', 'max')) + ' |')
    lines += ['', '## Accuracy', '']
    for key, node in report['nodes'].items():
        accuracy = node['accuracy']
        columns = ACCURACY_COLUMNS[key]
        lines += [f"### {key} ({accuracy['frames_scored']} frames scored)", '',
                  '| ' + ' | '.join(title for _, title in columns) + ' |',
                  '|' + '---|' * len(columns),
                  '| ' + ' | '.join(fmt(accuracy.get(k)) for k, _ in columns) + ' |', '']
    lines += _quality_lines(report)
    lines += ['## Pictures', '']
    for caption, name in report['pictures'].items():
        lines += [f'{caption}:', '', f'![{caption}]({name})', '']
    lines += ['## Recorded bag', '', f"`{report['output_bag']}` (MCAP), read back:", '',
              '| topic | type | messages |', '|---|---|---|']
    for topic, row in report['recorded'].items():
        lines.append(f"| `{topic}` | {row['type']} | {row['count']} |")
    if report['notes']:
        lines += ['', '## Notes', ''] + [f'- {note}' for note in report['notes']]
    return '\n'.join(lines) + '\n'


def write_report(out: Path, report: dict[str, Any], runs: list[NodeRun]) -> None:
    bag_path = out / 'bag'
    report['recorded'] = {t: {'type': m, 'count': n} for t, (m, n) in
                          topic_counts(bag_path).items()}
    outputs = {run.spec.key: list(run.spec.outputs) for run in runs}
    strip = StripTopics.of(report['input']['left_played'], outputs)
    pictures = {}
    if write_strip(bag_path, strip, out / 'strip.png'):
        pictures['frames spread over the run: ' + ', '.join(['input', *strip.columns()])] = \
            'strip.png'
    pictures.update(node_pictures(bag_path, out, runs))
    for run in runs:
        if run.scorer is not None:
            pictures.update(run.scorer.pictures(out))
    series = topic_latencies(bag_path, [t for topic_list in outputs.values() for t in topic_list])
    for topic, row in report['topics'].items():
        row['latency_ms'] = latency_stats(series.get(topic, []))
    pictures['latency of every output topic over the run'] = latency_plot(out, series)
    report['pictures'] = pictures
    report = json_ready(report)
    (out / 'report.json').write_text(json.dumps(report, indent=2) + '\n')
    (out / 'report.md').write_text(markdown(report))
