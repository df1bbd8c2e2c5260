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
Flow accuracy against exact ground truth, with OpenCV measured in the same run.

Synthetic motions (foundation generator, 96x128, exact flow): each method must stay under a
stated mean EPE over the generator's valid pixels (about 1.5-2x what it reaches, so the bounds
catch regressions, not noise). Middlebury training pairs (full size, grayscale) and Yosemite:
EPE/AAE by cl_vision_nodes.flow.metrics for lk, hs and bm, and for OpenCV DIS (MEDIUM preset)
and Farneback (0.5, 3, 15, 3, 5, 1.2, 0) on the same frames; `pytest -s` prints the table.

NaN policy (lk leaves pixels below min_eigenvalue NaN): EPE and AAE are means over pixels where
the ground truth is known and the estimate is finite; the density of those pixels is printed and
must stay >= LK_MIN_DENSITY on every sequence, so a sparse answer cannot buy a low EPE.

Required (issue 3): hs and lk each have a lower mean Middlebury EPE than Farneback, and the
better of the two is at or below DIS MEDIUM's (the issue measured DIS 0.397, Farneback 0.953).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import time

from cl_vision_nodes.dataio.formats import read_flo, read_image
from cl_vision_nodes.dataio.synthetic import flow_pair, Motion
from cl_vision_nodes.flow import flow_errors, FlowErrors, FlowEstimator
from cl_vision_nodes.flow.presets import DIS_PRESETS
import cv2
import numpy as np
import pytest

OURS = ('lk', 'hs', 'bm')
SYNTHETIC = (*OURS, 'dis')
OPENCV = ('DIS MEDIUM', 'Farneback')
MIDDLEBURY = ('RubberWhale', 'Grove2', 'Urban2', 'Venus')
LK_MIN_DENSITY = 0.95

MOTIONS = {
    'translation': Motion('translation', shift=(2.6, -1.7)),
    'rotation': Motion('rotation', angle_deg=4.0),
    'zoom': Motion('zoom', zoom=1.05),
    'piecewise': Motion('piecewise', shift=(1.2, 0.5), max_object_shift=3.0),
}
# Mean EPE bounds (px). Measured on PoCL: translation lk 0.037 hs 0.041 bm 0.18; rotation lk
# 0.077 hs 0.034 bm 0.25; zoom lk 0.051 hs 0.027 bm 0.20; piecewise (seed 0, motion edges) lk
# 0.28 hs 0.049 bm 0.34; dis (OpenCV's MEDIUM values: flow at half resolution, upsampled)
# translation 0.048, rotation 0.118, zoom 0.083, piecewise 0.197. The Middlebury comparison of dis
# with OpenCV's DIS is test_flow_cli's (through `cl-vision flow`).
EPE_BOUNDS = {
    'translation': {'lk': 0.07, 'hs': 0.07, 'bm': 0.3, 'dis': 0.1},
    'rotation': {'lk': 0.12, 'hs': 0.06, 'bm': 0.4, 'dis': 0.2},
    'zoom': {'lk': 0.1, 'hs': 0.05, 'bm': 0.35, 'dis': 0.15},
    'piecewise': {'lk': 0.4, 'hs': 0.1, 'bm': 0.5, 'dis': 0.35},
}


@pytest.fixture(scope='module')
def estimator(runtime):
    return FlowEstimator(runtime)


@pytest.mark.parametrize('method', SYNTHETIC)
@pytest.mark.parametrize('motion', list(MOTIONS))
def test_synthetic_motion_within_bound(estimator, method, motion):
    sample = flow_pair(96, 128, motion=MOTIONS[motion], seed=0)
    estimator.configure({'method': method})
    errors = flow_errors(estimator.estimate(sample.frame0, sample.frame1), sample.flow,
                         sample.valid)
    assert errors.density >= 0.95
    assert errors.epe <= EPE_BOUNDS[motion][method], errors


# --- Middlebury and Yosemite, side by side with OpenCV ------------------------------------------


@dataclass
class Result:
    errors: FlowErrors
    ms: float


def opencv_flow(name: str, frame0: np.ndarray, frame1: np.ndarray) -> np.ndarray:
    if name == 'DIS MEDIUM':
        return cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(frame0, frame1,
                                                                                 None)
    return cv2.calcOpticalFlowFarneback(frame0, frame1, None, 0.5, 3, 15, 3, 5, 1.2, 0)


def evaluate(estimator: FlowEstimator, frame0: np.ndarray, frame1: np.ndarray,
             truth: np.ndarray, mask: np.ndarray | None = None) -> dict[str, Result]:
    """Every method on one pair: errors and wall time (upload, all stages and download)."""
    results = {}
    for name in OURS + OPENCV:
        start = time.perf_counter()
        if name in OURS:
            estimator.configure({'method': name})
            flow = estimator.estimate(frame0, frame1)
        else:
            flow = opencv_flow(name, frame0, frame1)
        elapsed = (time.perf_counter() - start) * 1e3
        results[name] = Result(flow_errors(flow, truth, mask), elapsed)
    return results


def print_table(title: str, sequences: dict[str, dict[str, Result]], timed: bool = True) -> None:
    """
    Print one row per method; ``timed`` adds the mean wall ms per pair.

    Only warmed-up runs are timed: the first run of a new image size allocates its buffers.
    """
    names = list(sequences)
    print(f'\n{title}: EPE px / AAE deg per sequence (density where < 100 %)'
          + (', ms per pair' if timed else ''))
    print(f"{'method':<11}" + ''.join(f'{n:>24}' for n in names)
          + f"{'mean EPE':>10}{'mean AAE':>10}" + (f"{'ms':>8}" if timed else ''))
    for method in OURS + OPENCV:
        cells = []
        for name in names:
            e = sequences[name][method].errors
            density = f' {e.density:5.1%}' if e.density < 1.0 else ''
            cells.append(f'{e.epe:.3f} / {e.aae:5.2f}{density}'.rjust(24))
        epe = np.mean([sequences[n][method].errors.epe for n in names])
        aae = np.mean([sequences[n][method].errors.aae for n in names])
        ms = np.mean([sequences[n][method].ms for n in names])
        print(f'{method:<11}' + ''.join(cells) + f'{epe:10.3f}{aae:10.2f}'
              + (f'{ms:8.0f}' if timed else ''))


def gray_pair(folder: Path, first: str, second: str) -> tuple[np.ndarray, np.ndarray]:
    return read_image(folder / first), read_image(folder / second)


@pytest.fixture(scope='module')
def middlebury(shared_data, estimator) -> dict[str, dict[str, Result]]:
    root = shared_data('flow', 'middlebury')
    pairs = {name: (*gray_pair(root / name, 'frame10.png', 'frame11.png'),
                    read_flo(root / name / 'flow10.flo')) for name in MIDDLEBURY}
    evaluate(estimator, *pairs['Venus'])  # first run of each size: times below exclude it
    results = {name: evaluate(estimator, *pair) for name, pair in pairs.items()}
    print_table('Middlebury (grayscale, full size)', results)
    return results


def mean_epe(results: dict[str, dict[str, Result]], method: str) -> float:
    return float(np.mean([results[name][method].errors.epe for name in results]))


def test_middlebury_hs_and_lk_beat_farneback(middlebury):
    farneback = mean_epe(middlebury, 'Farneback')
    for method in ('hs', 'lk'):
        assert mean_epe(middlebury, method) < farneback, method


def test_middlebury_best_of_hs_and_lk_reaches_dis_medium(middlebury):
    best = min(mean_epe(middlebury, 'hs'), mean_epe(middlebury, 'lk'))
    assert best <= mean_epe(middlebury, 'DIS MEDIUM')


def test_middlebury_lk_keeps_most_pixels(middlebury):
    for name, results in middlebury.items():
        assert results['lk'].errors.density >= LK_MIN_DENSITY, name
        assert results['hs'].errors.density == 1.0 and results['bm'].errors.density == 1.0


def test_yosemite_without_sky_is_reported(shared_data, estimator):
    """
    Reported, loosely bounded: the sky is excluded, as in most papers.

    The sky (ground truth exactly (1, 0), the top rows) is excluded because its clouds break
    brightness constancy.
    """
    root = shared_data('flow', 'yosemite')
    truth = read_flo(root / 'correct_yos.flo')
    sky = (truth[..., 0] == 1.0) & (truth[..., 1] == 0.0)
    assert 0.1 < sky.mean() < 0.4 and not sky[-1].any()
    results = evaluate(estimator, *gray_pair(root, 'yos9.png', 'yos10.png'), truth, ~sky)
    print_table('Yosemite without sky', {'Yosemite': results}, timed=False)
    for method in ('hs', 'lk'):
        assert results[method].errors.epe < 1.0, method


def test_hs_cpu_formulation_keeps_the_gpu_formulations_errors(shared_data, runtime):
    """Issue 19: hs written for CPUs (hs_sor_cpu, hs_update_cpu) changes no EPE by 0.01 px."""
    root = shared_data('flow', 'middlebury')
    yosemite = shared_data('flow', 'yosemite')
    pairs = {name: (*gray_pair(root / name, 'frame10.png', 'frame11.png'),
                    read_flo(root / name / 'flow10.flo')) for name in MIDDLEBURY}
    pairs['Yosemite'] = (*gray_pair(yosemite, 'yos9.png', 'yos10.png'),
                         read_flo(yosemite / 'correct_yos.flo'))
    estimators = {formulation: FlowEstimator(runtime, {'method': 'hs'}, formulation)
                  for formulation in ('gpu', 'cpu')}
    for name, (frame0, frame1, truth) in pairs.items():
        epe = {formulation: flow_errors(estimator.estimate(frame0, frame1), truth).epe
               for formulation, estimator in estimators.items()}
        print(f'{name}: hs EPE gpu formulation {epe["gpu"]:.4f}, cpu {epe["cpu"]:.4f}')
        assert abs(epe['cpu'] - epe['gpu']) < 0.01, name


OPENCV_DIS = {'ultrafast': cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST,
              'fast': cv2.DISOPTICAL_FLOW_PRESET_FAST,
              'medium': cv2.DISOPTICAL_FLOW_PRESET_MEDIUM}


@pytest.mark.parametrize('formulation', ['cpu', 'gpu'])
def test_every_dis_preset_reaches_opencvs_in_both_formulations(shared_data, runtime, formulation):
    """
    Issue 31: each preset at or under OpenCV's same preset, whichever formulation runs.

    Mean EPE over the Middlebury pairs, and Yosemite's without its sky; the formulations'
    solvers differ (a GPU solves a level's iterations in one launch), so both are held to it.
    """
    root, yosemite = shared_data('flow', 'middlebury'), shared_data('flow', 'yosemite')
    pairs = {name: (*gray_pair(root / name, 'frame10.png', 'frame11.png'),
                    read_flo(root / name / 'flow10.flo'), None) for name in MIDDLEBURY}
    truth = read_flo(yosemite / 'correct_yos.flo')
    pairs['Yosemite'] = (*gray_pair(yosemite, 'yos9.png', 'yos10.png'), truth,
                         ~((truth[..., 0] == 1.0) & (truth[..., 1] == 0.0)))
    for preset, params in DIS_PRESETS.items():
        estimator = FlowEstimator(runtime, params, formulation)
        opencv = cv2.DISOpticalFlow_create(OPENCV_DIS[preset])
        ours, theirs = {}, {}
        for name, (frame0, frame1, truth, mask) in pairs.items():
            ours[name] = flow_errors(estimator.estimate(frame0, frame1), truth, mask).epe
            theirs[name] = flow_errors(opencv.calc(frame0, frame1, None), truth, mask).epe
        print(f'\n{formulation} formulation, dis {preset} / OpenCV: '
              + ', '.join(f'{k} {ours[k]:.3f} / {theirs[k]:.3f}' for k in ours))
        assert np.mean([ours[k] for k in MIDDLEBURY]) <= np.mean([theirs[k] for k in MIDDLEBURY])
        assert ours['Yosemite'] <= theirs['Yosemite'], preset
