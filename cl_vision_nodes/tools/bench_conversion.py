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
Benchmark of sensor_msgs/Image <-> NumPy conversion (bgr8), with the naive way as comparison.

What is timed (host only, no DDS):
- receive: ``image_to_numpy(msg)``, the zero-copy view a node gets; compared with a copying
  read (``np.array`` of it), which is what cv_bridge's ``imgmsg_to_cv2`` costs.
- publish: ``numpy_to_image(array, 'bgr8')``, message construction included; compared with
  assigning ``array.tobytes()`` to ``msg.data``, which rclpy converts to an array.array (and
  checks byte by byte on Humble, or on Kilted with ROS_PYTHON_CHECK_FIELDS=1).
Goal: under 1 ms at 1920x1080 both ways.
"""
from __future__ import annotations

from dataclasses import dataclass
import os
from typing import Sequence

from cl_vision_nodes.ros.image_conversion import converter_backend, image_to_numpy, numpy_to_image
from cl_vision_nodes.tools.bench_timing import time_ms
import numpy as np
from sensor_msgs.msg import Image

# A baseline slower than this per call (e.g. per-byte field checks) stops early.
_BASELINE_BUDGET_S = 3.0


@dataclass(frozen=True)
class ConversionRow:
    case: str
    width: int
    height: int
    mean_ms: float
    best_ms: float
    baseline: str
    baseline_mean_ms: float
    baseline_best_ms: float

    @property
    def speedup(self) -> float:
        return self.baseline_mean_ms / self.mean_ms


def _bytes_publish(a: np.ndarray) -> Image:
    msg = Image(height=a.shape[0], width=a.shape[1], encoding='bgr8', step=a.shape[1] * 3)
    msg.data = a.tobytes()
    return msg


def run(sizes: Sequence[tuple[int, int]] = ((640, 480), (1920, 1080)),
        repeats: int = 50) -> list[ConversionRow]:
    """Time both directions for each (width, height); returns one row per direction and size."""
    rows = []
    rng = np.random.default_rng(0)
    for width, height in sizes:
        a = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        msg = numpy_to_image(a, 'bgr8')
        rows.append(ConversionRow('Image->numpy (view)', width, height,
                                  *time_ms(lambda: image_to_numpy(msg), repeats),
                                  'copying read (cv_bridge)',
                                  *time_ms(lambda: np.array(image_to_numpy(msg)), repeats)))
        rows.append(ConversionRow('numpy->Image (array.array)', width, height,
                                  *time_ms(lambda: numpy_to_image(a, 'bgr8'), repeats),
                                  'msg.data = a.tobytes()',
                                  *time_ms(lambda: _bytes_publish(a), repeats,
                                           _BASELINE_BUDGET_S)))
    return rows


def format_table(rows: Sequence[ConversionRow]) -> str:
    header = (f'{"case":<28} {"size":>10} {"mean ms":>9} {"best ms":>9}   '
              f'{"comparison":<26} {"mean ms":>9} {"best ms":>9} {"speedup":>8}')
    lines = [header, '-' * len(header)]
    for r in rows:
        size = f'{r.width}x{r.height}'
        lines.append(f'{r.case:<28} {size:>10} {r.mean_ms:>9.3f} {r.best_ms:>9.3f}   '
                     f'{r.baseline:<26} {r.baseline_mean_ms:>9.3f} {r.baseline_best_ms:>9.3f} '
                     f'{r.speedup:>7.1f}x')
    return '\n'.join(lines)


def main() -> None:
    checks = os.environ.get('ROS_PYTHON_CHECK_FIELDS') == '1'
    print(f'Image conversion, bgr8, converter: {converter_backend()}, '
          f'rclpy field checks: {"on" if checks else "off"}')
    print(format_table(run()))


if __name__ == '__main__':
    main()
