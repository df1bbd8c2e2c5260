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
SURF accuracy: fidelity to OpenCV, repeatability, matching score and rotation invariance.

Fidelity to OpenCV's own keypoints, graf repeatability / matching score next to OpenCV SIFT and
ORB, and descriptor invariance to rotation. Definitions: surf/evaluation.py.

Images are read with ``cv2.imread(path, IMREAD_GRAYSCALE)``, as the OpenCV reference keypoints
were: on the graf PNGs that conversion differs from ``cvtColor(BGR2GRAY)`` (what
``read_image`` does) by up to 43 grey levels, and OpenCV's keypoints of the cvtColor image are
another set (82 % overlap with the reference on img1).
"""
from cl_vision_nodes.dataio.formats import read_homography
from cl_vision_nodes.surf import Keypoints, SurfExtractor
from cl_vision_nodes.surf.evaluation import (fidelity, mutual_nearest_rate, pair_scores,
                                             read_opencv_keypoints)
import cv2
import numpy as np
import pytest

OPENCV_SETTINGS = {'hessian_threshold': 100.0, 'n_octaves': 4, 'n_octave_layers': 3,
                   'extended': False, 'upright': False}
IMAGES = {'box': 'box.png', 'img1': 'graf/img1.png', 'img2': 'graf/img2.png',
          'img3': 'graf/img3.png'}
ORB_FEATURES = 5000  # about as many as SURF finds on graf at threshold 100


def opencv_gray(path) -> np.ndarray:
    return cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)


@pytest.fixture(scope='module')
def grays(shared_data):
    return {name: opencv_gray(shared_data('features', path)) for name, path in IMAGES.items()}


@pytest.fixture(scope='module')
def surf(runtime, grays):
    """Our keypoints of every image, with OpenCV's settings (max_keypoints at its default)."""
    extractor = SurfExtractor(runtime, OPENCV_SETTINGS)
    return {name: extractor.detect_and_describe(gray) for name, gray in grays.items()}


def from_opencv(keypoints, descriptors: np.ndarray, binary: bool = False) -> Keypoints:
    """cv2 keypoints as Keypoints; binary descriptors unpacked to 0/1 floats (L2^2 = Hamming)."""
    def column(attr):
        return np.array([attr(k) for k in keypoints], np.float32)
    values = np.unpackbits(descriptors, axis=1) if binary else descriptors
    return Keypoints(column(lambda k: k.pt[0]), column(lambda k: k.pt[1]),
                     column(lambda k: k.size), column(lambda k: k.angle),
                     column(lambda k: k.response), np.zeros(len(keypoints), np.int32),
                     np.zeros(len(keypoints), np.int8), values.astype(np.float32))


@pytest.mark.parametrize('name', list(IMAGES))
def test_reproduces_opencv_keypoints(surf, shared_data, capsys, name):
    reference = read_opencv_keypoints(shared_data('features', 'opencv_surf_thr100', f'{name}.txt'))
    result = fidelity(surf[name], reference, position_tol=1.0, size_tol=0.10, angle_tol=5.0)
    with capsys.disabled():
        print(f'\nSURF fidelity {name}: OpenCV {result.reference}, ours {result.ours}, '
              f'reproduced {result.reproduced_fraction:.2%}, extra {result.extra_fraction:.2%}, '
              f'angle within 5 deg {result.angle_fraction:.2%}')
    assert result.reproduced_fraction >= 0.95
    assert result.extra_fraction <= 0.10
    assert result.angle_fraction >= 0.90


def test_graf_repeatability_and_matching_against_sift_and_orb(surf, grays, shared_data, capsys):
    reference = {name: read_opencv_keypoints(
        shared_data('features', 'opencv_surf_thr100', f'{name}.txt')) for name in IMAGES}
    sift, orb = cv2.SIFT_create(), cv2.ORB_create(nfeatures=ORB_FEATURES)
    detectors = {
        'SURF (ours)': surf,
        'SIFT (OpenCV)': {n: from_opencv(*sift.detectAndCompute(grays[n], None))
                          for n in ('img1', 'img2', 'img3')},
        'ORB (OpenCV)': {n: from_opencv(*orb.detectAndCompute(grays[n], None), binary=True)
                         for n in ('img1', 'img2', 'img3')},
    }
    rows = ['| detector | pair | n1 / n2 | repeatability | one-to-one | matching score |',
            '|---|---|---|---|---|---|']
    scores = {}
    for label, keypoints in detectors.items():
        for target in ('img2', 'img3'):
            h = read_homography(shared_data('features', 'graf', f'H1to{target[-1]}p'))
            s = pair_scores(keypoints['img1'], keypoints[target], h, grays['img1'].shape,
                            grays[target].shape)
            scores[label, target] = s
            rows.append(f'| {label} | 1->{target[-1]} | {s.n1} / {s.n2} | '
                        f'{s.repeatability:.3f} | {s.one_to_one_repeatability:.3f} | '
                        f'{s.matching_score:.3f} |')
    opencv_rep = {}
    for target in ('img2', 'img3'):
        h = read_homography(shared_data('features', 'graf', f'H1to{target[-1]}p'))
        keyed = [Keypoints(*[getattr(k, f) for f in ('x', 'y', 'size', 'angle', 'response',
                                                     'octave', 'laplacian')],
                           np.zeros((len(k), 1), np.float32))
                 for k in (reference['img1'], reference[target])]
        opencv_rep[target] = pair_scores(*keyed, h, grays['img1'].shape,
                                         grays[target].shape).repeatability
        rows.append(f'| SURF (OpenCV keypoints) | 1->{target[-1]} | | '
                    f'{opencv_rep[target]:.3f} | | |')
    with capsys.disabled():
        print('\n' + '\n'.join(rows))
    for target in ('img2', 'img3'):
        assert abs(scores['SURF (ours)', target].repeatability - opencv_rep[target]) <= 0.01
    assert scores['SURF (ours)', 'img2'].matching_score >= 0.15
    assert scores['SURF (ours)', 'img3'].matching_score >= 0.06


def rotated(image: np.ndarray, degrees: int) -> tuple[np.ndarray, np.ndarray]:
    """
    Rotate the image counter-clockwise by ``degrees`` on a canvas holding all of it.

    Returns it and the 3x3 transform of pixel coordinates; multiples of 90 degrees are exact
    (np.rot90).
    """
    h, w = image.shape
    if degrees % 90 == 0:
        out = np.ascontiguousarray(np.rot90(image, degrees // 90))
    m = cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), degrees, 1.0)
    cos, sin = abs(m[0, 0]), abs(m[0, 1])
    size = (int(np.ceil(w * cos + h * sin - 1e-9)), int(np.ceil(w * sin + h * cos - 1e-9)))
    m[0, 2] += (size[0] - w) / 2
    m[1, 2] += (size[1] - h) / 2
    if degrees % 90:
        out = cv2.warpAffine(image, m, size, flags=cv2.INTER_LINEAR)
    return out, np.vstack([m, [0.0, 0.0, 1.0]])


ROTATION_BOUNDS = {30: 0.45, 60: 0.45, 90: 0.9, 180: 0.9}
"""Lower bounds of the mutual nearest-neighbour rate. Multiples of 90 degrees keep the pixel
grid, and our keypoints and descriptors are then exactly covariant (measured 1.0). At 30 and 60
degrees the rate (measured 0.59 / 0.61) is limited by OpenCV's orientation estimate, which we
reproduce: only ~45 % of corresponding keypoints get angles within 5 degrees of each other, and
those pairs are mutual nearest neighbours 80 % of the time."""


def test_descriptors_survive_rotation(runtime, grays, capsys):
    image = grays['img1'][120:520, 200:600]  # 400x400: even sizes keep every octave's grid
    extractor = SurfExtractor(runtime, OPENCV_SETTINGS)
    sift = cv2.SIFT_create()
    ours0 = extractor.detect_and_describe(image)
    sift0 = from_opencv(*sift.detectAndCompute(image, None))
    rows = ['| rotation | SURF (ours) pairs | SURF mutual NN | SIFT mutual NN |',
            '|---|---|---|---|']
    rates = {}
    for degrees in ROTATION_BOUNDS:
        turned, transform = rotated(image, degrees)
        rate, pairs = mutual_nearest_rate(ours0, extractor.detect_and_describe(turned),
                                          transform, image.shape, turned.shape)
        sift_turned = from_opencv(*sift.detectAndCompute(turned, None))
        sift_rate, _ = mutual_nearest_rate(sift0, sift_turned, transform, image.shape,
                                           turned.shape)
        rates[degrees] = rate
        rows.append(f'| {degrees} | {pairs} | {rate:.3f} | {sift_rate:.3f} |')
    with capsys.disabled():
        print('\n' + '\n'.join(rows))
    for degrees, bound in ROTATION_BOUNDS.items():
        assert rates[degrees] >= bound, f'{degrees} degrees: {rates[degrees]:.3f} < {bound}'
