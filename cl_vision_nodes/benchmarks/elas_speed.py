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
Ms per frame of ELAS with libelas' stage names (`cl-vision bench elas`).

libelas itself (pyelas, single thread, when installed) and OpenCV StereoSGBM run in the same run.

Frames: a real rectified pair (``--left``/``--right``, resized to each size) or a generated
stereo pair with ground truth. Ours: upload of both images, every stage on the device and the
download of the left map. No ROS imports.

At 1242x375 and 1280x720 a second row times what disparity_node with ``rectify`` does per
frame, the pair taken as raw images of a distorted (plumb_bob), rotated stereo camera: rectify
both into the matcher, ELAS, download the map, depth image, and the organised colour point cloud
(the left image rectified again for its colours), with the device ms of every stage; beside it
OpenCV on the CPU doing the same work as image_proc + stereo_image_proc (remap both, SGBM,
reprojectImageTo3D).
"""
from __future__ import annotations


from cl_vision_nodes.benchmarks.frame_work import matching
from cl_vision_nodes.benchmarks.timing import BenchRow, device_stages, time_ms
from cl_vision_nodes.camera.calibration import CameraCalibration
from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.camera.rectify_maps import rectify_maps
from cl_vision_nodes.dataio.formats import read_image
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.elas.presets import PRESETS
from cl_vision_nodes.imaging.device_image import DeviceGray
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.stereo.geometry import StereoGeometry
from cl_vision_nodes.stereo.point_cloud import CloudLayout
from cl_vision_nodes.stereo.reproject import DisparityMap, Reprojector
import cv2
import numpy as np


SIZES = ((1242, 375), (640, 480), (1280, 720))
PIPELINE_SIZES = ((1242, 375), (1280, 720))
SGBM_DISPARITIES = 128
KITTI_DISTORTION = (-0.3691, 0.1969, 0.00135, 0.00057, -0.0677)  # KITTI camera 02, plumb_bob
BASELINE_M = 0.54


def pair(width: int, height: int, left_path: str | None, right_path: str | None):
    if left_path and right_path:
        return tuple(cv2.resize(read_image(p), (width, height), interpolation=cv2.INTER_AREA)
                     for p in (left_path, right_path))
    sample = stereo_pair(height, width, seed=0, max_disparity=width / 10)
    return sample.left, sample.right


def stereo_calibrations(width: int, height: int) -> tuple[CameraCalibration, CameraCalibration]:
    """
    Return a KITTI-like distorted pair at this size.

    Each camera is turned 0.5 degrees from the rectified frame.
    """
    fx = 0.773 * width
    k = [fx, 0.0, width / 2 + 3.5, 0.0, fx, height / 2 - 2.5, 0.0, 0.0, 1.0]
    pair = []
    for sign in (1.0, -1.0):
        angle = np.radians(0.5 * sign)
        r = [np.cos(angle), 0.0, np.sin(angle), 0.0, 1.0, 0.0, -np.sin(angle), 0.0,
             np.cos(angle)]
        tx = 0.0 if sign > 0 else -0.75 * width * BASELINE_M
        p = [0.75 * width, 0.0, width / 2, tx, 0.0, 0.75 * width, height / 2, 0.0,
             0.0, 0.0, 1.0, 0.0]
        pair.append(CameraCalibration.from_fields(width, height, 'plumb_bob', KITTI_DISTORTION,
                                                  k, r, p))
    return pair[0], pair[1]


def raw_to_points(preset: str, left, right):
    """
    Run disparity_node's per-frame device work with ``rectify``, depth and points subscribed.

    For ``device_stages``; with use_color the left image is rectified again for the cloud.
    """
    height, width = left.shape
    calibrations = stereo_calibrations(width, height)
    geometry = StereoGeometry.from_projections(calibrations[0].P, calibrations[1].P)
    raws = [array_to_raw(image, 'mono8') for image in (left, right)]

    def prepare(runtime: ClRuntime):
        matcher = ElasMatcher(runtime, PRESETS[preset])
        reprojector = Reprojector(runtime)
        rectifiers = [Rectifier(runtime) for _ in calibrations]
        for rectifier, calibration in zip(rectifiers, calibrations):
            rectifier.set_calibration(calibration)
        subsampled = bool(matcher.values['subsampling'])
        disp_min = float(matcher.values['disp_min'])

        def frame():  # as disparity_node with rectify does it
            pair = [DeviceGray(rectifier.rectify_gray(raw), height, width)
                    for rectifier, raw in zip(rectifiers, raws)]
            rows, cols = matcher.output_shape(width, height)
            device_map = DisparityMap(matcher.match(*pair), cols, rows, disp_min, subsampled)
            matcher.images.download(device_map.buffer, (rows, cols), np.dtype(np.float32))
            reprojector.depth(device_map, geometry)
            reprojector.points(device_map, geometry, CloudLayout(),
                               color=rectifiers[0].rectify(raws[0]))
        return frame
    return prepare


def opencv_raw_to_points(left, right):
    """
    Do image_proc + stereo_image_proc's work with OpenCV on the CPU.

    Remap both images with precomputed maps, SGBM, reprojectImageTo3D.
    """
    height, width = left.shape
    calibrations = stereo_calibrations(width, height)
    maps = [rectify_maps(calibration) for calibration in calibrations]
    q = StereoGeometry.from_projections(calibrations[0].P, calibrations[1].P).q_matrix()
    sgbm = cv2.StereoSGBM_create(0, SGBM_DISPARITIES, 5, 8 * 25, 32 * 25)

    def frame():
        rectified = [cv2.remap(image, *pair, cv2.INTER_LINEAR)
                     for image, pair in zip((left, right), maps)]
        disparity = sgbm.compute(*rectified).astype(np.float32) / 16.0
        cv2.reprojectImageTo3D(disparity, q)
    return frame


def libelas(preset: str):
    """Return pyelas' matcher with the same setting, or None where pyelas is not installed."""
    try:
        import elas
    except ImportError:
        return None
    matcher = elas.Elas()
    matcher.set_preset(elas.PRESET_MIDDLEBURY if preset == 'middlebury' else elas.PRESET_ROBOTICS)
    return matcher


def run(device: str, repeats: int, left_path: str | None, right_path: str | None,
        preset: str, sizes=SIZES) -> list[BenchRow]:
    runtime = ClRuntime(device)
    rows: list[BenchRow] = []
    for width, height in sizes:
        left, right = pair(width, height, left_path, right_path)
        call = matching(preset, left, right)(runtime)
        rows.append(BenchRow(f'ELAS {preset}', runtime.entry.name, width, height,
                             *time_ms(call, repeats),
                             device_stages(device, matching(preset, left, right))))
        reference = libelas(preset)
        if reference is not None:
            rows.append(BenchRow(f'libelas {preset}', 'pyelas, 1 thread', width, height,
                                 *time_ms(lambda: reference.process(left, right), repeats)))
        elif width == sizes[0][0]:
            print('libelas: pyelas is not installed here, so no libelas row')
        sgbm = cv2.StereoSGBM_create(0, SGBM_DISPARITIES, 5, 8 * 25, 32 * 25)
        opencv = f'OpenCV CPU ({cv2.getNumThreads()} threads)'
        rows.append(BenchRow(f'SGBM {SGBM_DISPARITIES}', opencv, width, height,
                             *time_ms(lambda: sgbm.compute(left, right), repeats)))
        if (width, height) in PIPELINE_SIZES:
            prepare = raw_to_points(preset, left, right)
            rows.append(BenchRow(f'raw->points {preset}', runtime.entry.name, width, height,
                                 *time_ms(prepare(runtime), repeats),
                                 device_stages(device, prepare)))
            rows.append(BenchRow('raw->points SGBM', opencv, width, height,
                                 *time_ms(opencv_raw_to_points(left, right), repeats)))
    return rows
