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
disparity_node over real Fast DDS.

Synchronised pairs give the library's disparity in a correct DisparityImage; bad pairs and missing
calibration are logged, never published; depth and points follow the disparity, and from a raw pair
(``rectify``) reproject a plane at its depth (the scene of plane_scene.py); they are computed
only while subscribed.
"""
from __future__ import annotations

import math
import time

from cl_vision_nodes.camera.rectify import Rectifier
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.imaging.device_image import DeviceGray, DeviceImages
from cl_vision_nodes.imaging.encodings import array_to_raw
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.ros.keypoint_cloud import cloud_to_array
from cl_vision_nodes.stereo.point_cloud import unpack_rgb
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from oracles.stereo import valid_window
from plane_scene import (ask_all, assert_cloud_of_the_plane, assert_plane_depth, calibration,
                         Clock, COLOUR_RED)
from plane_scene import H as PLANE_H
from plane_scene import raw_pair_msgs, raw_view, rectified_truth
from plane_scene import W as PLANE_W
import pytest
from rosutil import (image_to_numpy, NodeProcess, numpy_to_image, publish_each,
                     publish_until_answered)
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from stereo_msgs.msg import DisparityImage

pytestmark = pytest.mark.ros

NODE = 'disparity_node'
H, W = 96, 128
PAIR = stereo_pair(H, W, seed=2, max_disparity=12.0)
FX, BASELINE = 100.0, 0.25
TOPICS = ('/stereo_test/left/image_rect', '/stereo_test/right/image_rect',
          '/stereo_test/left/camera_info', '/stereo_test/right/camera_info')


def info(right: bool, width: int = W, height: int = H) -> CameraInfo:
    msg = CameraInfo(width=width, height=height)
    msg.p = [FX, 0.0, width / 2, -FX * BASELINE if right else 0.0,
             0.0, FX, height / 2, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def stereo_msgs(tag: str, sec: int, left=PAIR.left, right=PAIR.right, infos=True,
                right_offset_ns: int = 0):
    msgs = [numpy_to_image(left, 'mono8'), numpy_to_image(right, 'mono8')]
    if infos:
        msgs += [info(False, left.shape[1], left.shape[0]),
                 info(True, right.shape[1], right.shape[0])]
    for i, m in enumerate(msgs):
        m.header.frame_id = tag
        m.header.stamp.sec = sec
        m.header.stamp.nanosec = right_offset_ns if i in (1, 3) else 0
    return msgs


@pytest.fixture(scope='module')
def node(ros):
    remaps = [a for t, n in zip(TOPICS, ('left/image_rect', 'right/image_rect',
                                         'left/camera_info', 'right/camera_info'))
              for a in ('-r', f'{n}:={t}')]
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       [*remaps, '-p', 'disp_max:=32', '-r', 'disparity:=/stereo_test/disparity',
                        '-r', 'disparity/color:=/stereo_test/disparity/color',
                        '-r', 'depth:=/stereo_test/depth', '-r', 'points:=/stereo_test/points'])
    pubs = [ros.publisher(Image if 'image' in t else CameraInfo, t) for t in TOPICS]
    out = ros.collect(DisparityImage, '/stereo_test/disparity')
    assert ros.wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs)), \
        proc.output()
    yield proc, pubs, out
    assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()


def ask(ros, node, tag: str, **kwargs) -> DisparityImage:
    proc, pubs, out = node
    return publish_until_answered(
        lambda: publish_each(pubs, stereo_msgs(tag, Clock.tick(), **kwargs)), out, tag,
        log=proc.output)


def test_disparity_image_fields_and_values(ros, node):
    got = ask(ros, node, 'pair-1')
    assert (got.f, got.t) == (FX, BASELINE)
    assert (got.min_disparity, got.max_disparity) == (0.0, 32.0) and got.delta_d > 0
    disparity = image_to_numpy(got.image)
    assert got.image.encoding == '32FC1' and disparity.shape == (H, W)
    expected = ElasMatcher(ClRuntime('auto'), {'disp_max': 32}).compute_gray(PAIR.left, PAIR.right)
    expected[expected < 0] = -1.0
    np.testing.assert_array_equal(disparity, expected)
    valid = disparity >= got.min_disparity
    assert valid.mean() > 0.5 and (disparity[~valid] < got.min_disparity).all()
    good = valid & PAIR.valid
    assert np.mean(np.abs(disparity[good] - PAIR.disparity[good]) > 2) < 0.1
    window = got.valid_window  # valid_window of the map it sends (test_valid_window.py)
    assert (window.x_offset, window.y_offset, window.width, window.height) == \
        valid_window(disparity, got.min_disparity)


def test_size_mismatch_is_logged_not_published(ros, node):
    proc, pubs, out = node
    for _ in range(15):  # bad-input warnings are throttled: a previous test's may hold it back
        for pub, msg in zip(pubs, stereo_msgs('mismatch', Clock.tick(),
                                              right=PAIR.right[:, :W - 8])):
            pub.publish(msg)
        if proc.wait_for_output('expected a rectified pair', 1.0):
            break
    assert 'expected a rectified pair' in proc.output(), proc.output()
    ask(ros, node, 'after-mismatch')
    # one reliable publisher, pairs answered in order: a 'mismatch' output would have come first
    assert not any(m.header.frame_id == 'mismatch' for m in out.messages)


def test_missing_camera_info_is_reported(ros, node):
    proc, pubs, _ = node
    # One pair a second, not a burst the subscriptions' depth would cut to queue_size: from the
    # sixth on the synchroniser drops images, reported by a 5 s timer (throttled to 30 s).
    for _ in range(40):
        for pub, msg in zip(pubs, stereo_msgs('no-info', Clock.tick(), infos=False)):
            pub.publish(msg)
        if proc.wait_for_output('found no partner', 1.0):
            break
    assert 'found no partner' in proc.output(), proc.output()
    ask(ros, node, 'after-no-info')


def test_camera_info_that_is_not_finite_is_refused_with_a_warning(ros, node):
    proc, pubs, out = node
    warning = 'right camera_info P is not finite ([nan, nan'
    for _ in range(15):  # bad-input warnings are throttled: a previous test's may hold it back
        msgs = stereo_msgs('nan-info', Clock.tick())
        msgs[3].p = [math.nan] * 12
        for pub, msg in zip(pubs, msgs):
            pub.publish(msg)
        if ros.wait_until(lambda: warning in proc.output(), timeout=1.0):
            break
    assert warning in proc.output(), proc.output()
    ask(ros, node, 'after-nan-info')
    # one reliable publisher, pairs answered in order: a 'nan-info' output would have come first
    assert not any(m.header.frame_id == 'nan-info' for m in out.messages)


def test_subsampling_publishes_a_consistent_half_size_disparity_image(ros, node):
    results = ros.set_parameters(NODE, {'subsampling': True})
    assert all(r.successful for r in results), results
    try:
        got = ask(ros, node, 'subsampled')
    finally:
        ros.set_parameters(NODE, {'subsampling': False})
    disparity = image_to_numpy(got.image)
    assert disparity.shape == (H // 2, W // 2)
    assert (got.f, got.t) == (FX / 2, BASELINE)  # f of the half-size image, depth = f T / d
    assert (got.min_disparity, got.max_disparity, got.delta_d) == (0.0, 16.0, 1 / 32)
    full_res = ElasMatcher(ClRuntime('auto'), {'disp_max': 32, 'subsampling': True}) \
        .compute_gray(PAIR.left, PAIR.right)
    valid = full_res >= 0
    assert valid.mean() > 0.5
    np.testing.assert_array_equal(disparity[valid], full_res[valid] / 2)
    assert (disparity[~valid] < got.min_disparity).all()


def test_parameter_change_applies_to_the_next_pair(ros, node):
    with ros.changed_parameters(NODE, disp_max=20) as results:
        assert all(r.successful for r in results), results
        got = ask(ros, node, 'narrow')
        assert got.max_disparity == 20.0
        with ros.changed_parameters(NODE, disp_min=30) as bad:
            assert not bad[0].successful and 'disp' in bad[0].reason
    with ros.changed_parameters(NODE, approximate_sync=True) as ro:
        assert not ro[0].successful and 'read-only' in ro[0].reason


def test_approximate_sync_pairs_offset_stamps(ros):
    remaps = [a for t, n in zip(TOPICS, ('left/image_rect', 'right/image_rect',
                                         'left/camera_info', 'right/camera_info'))
              for a in ('-r', f'{n}:={t}_approx')]
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       [*remaps, '-r', '__node:=disparity_approx', '-p', 'approximate_sync:=true',
                        '-p', 'approximate_sync_tolerance_seconds:=0.01', '-p', 'disp_max:=32',
                        '-r', 'disparity:=/stereo_test/disparity_approx'])
    try:
        pubs = [ros.publisher(Image if 'image' in t else CameraInfo, f'{t}_approx')
                for t in TOPICS]
        out = ros.collect(DisparityImage, '/stereo_test/disparity_approx')
        assert ros.wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs))
        got = ask(ros, (proc, pubs, out), 'approx', right_offset_ns=3_000_000)
        assert got.header.stamp.nanosec == 0  # the left image's header
    finally:
        assert proc.stop() == 0, proc.output()


def test_messages_before_the_first_set_are_start_up_not_a_stamp_mismatch(ros):
    """
    As DDS discovery matches the four inputs one by one: the first stamps lack the right image.

    Those are given up when the first complete set forms; no "found no partner" warning follows
    (the report runs every 5 s) while every later set is complete.
    """
    topics = [f'{t}_startup' for t in TOPICS]
    remaps = [a for t, n in zip(topics, ('left/image_rect', 'right/image_rect',
                                         'left/camera_info', 'right/camera_info'))
              for a in ('-r', f'{n}:={t}')]
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       [*remaps, '-r', '__node:=disparity_startup', '-p', 'disp_max:=32',
                        '-r', 'disparity:=/stereo_test/disparity_startup'])
    try:
        pubs = [ros.publisher(Image if 'image' in t else CameraInfo, t) for t in topics]
        out = ros.collect(DisparityImage, '/stereo_test/disparity_startup')
        assert ros.wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs))
        for _ in range(3):
            left, _right, *infos = stereo_msgs('early', Clock.tick())
            publish_each([pubs[0], *pubs[2:]], [left, *infos])
        got = ask(ros, (proc, pubs, out), 'first')
        deadline = time.monotonic() + 6.0  # past the first report
        while time.monotonic() < deadline:
            publish_each(pubs, stereo_msgs('steady', Clock.tick()))
            time.sleep(0.2)
        assert got is not None and out.wait_for(
            lambda msgs: any(m.header.frame_id == 'steady' for m in msgs))
        assert 'no partner' not in proc.output(), proc.output()
    finally:
        assert proc.stop() == 0, proc.output()


# --- depth and points ----------------------------------------------------------------------------

def test_depth_and_points_follow_the_published_disparity(ros, node):
    """
    Rectified mono input: depth = f T / d, points reproject through the left P.

    rgb is the gray level; with the disparity's header.
    """
    proc, pubs, out = node
    outputs = {'disparity': out, 'depth': ros.collect(Image, '/stereo_test/depth'),
               'points': ros.collect(PointCloud2, '/stereo_test/points')}
    got = ask_all(pubs, lambda sec: stereo_msgs('3d', sec), outputs, '3d', log=proc.output)
    assert got['depth'].header == got['points'].header == got['disparity'].header
    disparity = image_to_numpy(got['disparity'].image)
    valid = disparity >= got['disparity'].min_disparity
    depth = image_to_numpy(got['depth'])
    assert np.array_equal(np.isfinite(depth), valid & (disparity > 0))
    np.testing.assert_allclose(depth[valid], FX * BASELINE / disparity[valid], rtol=1e-6)
    cloud = got['points']
    assert [f.name for f in cloud.fields] == ['x', 'y', 'z', 'rgb'] and cloud.point_step == 32
    points = cloud_to_array(cloud).reshape(H, W)
    u, v = np.meshgrid(np.arange(W), np.arange(H))
    finite = np.isfinite(depth)
    np.testing.assert_allclose(points['z'][finite], depth[finite], rtol=1e-6)
    np.testing.assert_allclose(points['x'][finite], (u - W / 2)[finite] * depth[finite] / FX,
                               rtol=1e-5, atol=1e-6)
    rgb = unpack_rgb(points['rgb'][finite])
    assert (rgb == PAIR.left[finite][:, None]).all()


def test_a_raw_pair_is_rectified_and_matched_on_the_device_with_one_upload_per_image():
    """
    The device path of ``rectify``, as disparity_node runs it: rectify_gray, then ``match``.

    Each raw image crosses the bus once; the rectified pair is copied into the matcher's inputs
    on the device, and the map ``match`` returns (``last_output``) is the one ``compute`` gives
    for the rectified images.
    """
    runtime = ClRuntime('auto', profile=True)
    matcher = ElasMatcher(runtime, {'disp_max': 32})
    rectifiers = [Rectifier(runtime) for _ in range(2)]
    for rectifier, side in zip(rectifiers, ('left', 'right')):
        rectifier.set_calibration(calibration(side))
    transfers: list[str] = []
    upload, copy = runtime.upload, runtime.copy

    def counted(name, transfer):  # the runtime's own call, noted with its stage
        return lambda *args, **kwargs: (transfers.append(f'{name} {args[2]}'),
                                        transfer(*args, **kwargs))[1]
    runtime.upload, runtime.copy = counted('upload', upload), counted('copy', copy)
    pair = [DeviceGray(rectifier.rectify_gray(array_to_raw(raw_view(side), 'mono8')),
                       PLANE_H, PLANE_W) for rectifier, side in zip(rectifiers, ('left', 'right'))]
    left_map = matcher.match(*pair)
    images = [t for t in transfers if t.endswith(' upload')]  # maps and prior: per setting
    assert images == ['upload upload', 'upload upload', 'copy upload', 'copy upload'], transfers
    assert left_map == matcher.last_output
    runtime.upload, runtime.copy = upload, copy
    shape = matcher.output_shape(PLANE_W, PLANE_H)
    disparity = matcher.images.download(left_map, shape, np.dtype(np.float32))
    rectified = [array_to_raw(matcher.images.download(gray.buffer, (PLANE_H, PLANE_W),
                                                      np.dtype(np.float32)), '32FC1')
                 for gray in pair]
    np.testing.assert_array_equal(matcher.compute(*rectified), disparity)
    assert np.mean(disparity == np.float32(16.0)) > 0.5


def test_a_mono8_pair_decoded_elsewhere_is_decoded_once_an_image_into_the_matchers_inputs():
    """The node's frames (its own DeviceImages) reach ELAS's inputs by one decode each."""
    runtime = ClRuntime('auto', profile=True)
    matcher = ElasMatcher(runtime, {'disp_max': 32})
    raws = [array_to_raw(raw_view(side), 'mono8') for side in ('left', 'right')]
    want = matcher.compute(*raws)
    images = DeviceImages(runtime)
    runtime.profiler.collect_kernels()
    left_map = matcher.match(*(images.decode(raw, side)
                               for raw, side in zip(raws, ('left', 'right'))))
    launches = {name: time.launches for name, time in runtime.profiler.collect_kernels().items()}
    assert launches['decode_mono8'] == 2 and launches['[upload]'] == 2, launches  # no copy
    np.testing.assert_array_equal(
        matcher.images.download(left_map, want.shape, np.dtype(np.float32)), want)


RAW_TOPICS = ('/raw_test/left/image_raw', '/raw_test/right/image_raw',
              '/raw_test/left/camera_info', '/raw_test/right/camera_info')
RAW_NODE = '/raw_test/disparity_node'


@pytest.fixture(scope='module')
def raw_node(ros):
    """
    Start disparity_node with rectify, in /raw_test, profiled and reporting every half second.

    Its diagnostics name the stages it ran.
    """
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       ['-r', '__ns:=/raw_test', '-p', 'rectify:=true', '-p', 'disp_max:=32',
                        '-p', 'profile:=true', '-p', 'diagnostics_period:=0.5'])
    pubs = [ros.publisher(Image if 'image' in t else CameraInfo, t) for t in RAW_TOPICS]
    disparity = ros.collect(DisparityImage, '/raw_test/disparity')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    assert ros.wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs)), \
        proc.output()
    yield proc, pubs, disparity, diagnostics
    assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()


@pytest.fixture(scope='module')
def raw_outputs(ros, raw_node):
    """Subscribe of depth and points (from then on the node computes them)."""
    return {'disparity': raw_node[2], 'depth': ros.collect(Image, '/raw_test/depth'),
            'points': ros.collect(PointCloud2, '/raw_test/points')}


def stage_reports(diagnostics) -> list[dict[str, str]]:
    """Return the raw node's diagnostics that counted frames, as key -> value."""
    reports = []
    for array in diagnostics.messages:
        for status in array.status:
            values = {kv.key: kv.value for kv in status.values}
            if status.name.startswith(RAW_NODE) and int(values.get('frames', 0)) > 0:
                reports.append(values)
    return reports


def test_depth_and_points_are_computed_only_while_subscribed(ros, raw_node):
    proc, pubs, disparity, diagnostics = raw_node
    ask_all(pubs, lambda sec: raw_pair_msgs('unwatched', sec), {'disparity': disparity},
            'unwatched', log=proc.output)
    assert diagnostics.wait_for(lambda msgs: stage_reports(diagnostics)), proc.output()
    for report in stage_reports(diagnostics):
        assert 'device_rectify_ms' in report and 'device_matching_ms' in report, report
        assert 'device_depth_ms' not in report and 'device_points_ms' not in report, report
    depth = ros.collect(Image, '/raw_test/depth')
    points = ros.collect(PointCloud2, '/raw_test/points')
    ask_all(pubs, lambda sec: raw_pair_msgs('watched', sec),
            {'disparity': disparity, 'depth': depth, 'points': points}, 'watched',
            log=proc.output)
    assert diagnostics.wait_for(lambda msgs: any(
        'device_depth_ms' in r and 'device_points_ms' in r for r in stage_reports(diagnostics)))


def test_raw_pair_is_rectified_by_the_node_to_depth_and_points_of_the_plane(
        ros, raw_node, raw_outputs):
    proc, pubs, _, _ = raw_node
    got = ask_all(pubs, lambda sec: raw_pair_msgs('raw-plane', sec), raw_outputs, 'raw-plane',
                  log=proc.output)
    header = got['disparity'].header
    assert got['depth'].header == got['points'].header == header  # left's frame, pair's stamp
    depth = image_to_numpy(got['depth'])
    assert got['depth'].encoding == '32FC1' and depth.shape == (PLANE_H, PLANE_W)
    assert_plane_depth(depth)
    points = assert_cloud_of_the_plane(got['points'], depth)
    finite = np.isfinite(depth)
    rgb = unpack_rgb(points['rgb'][finite])  # the rectified left gray
    assert (rgb[:, 0] == rgb[:, 1]).all() and (rgb[:, 1] == rgb[:, 2]).all()
    assert np.abs(rgb[:, 0] - rectified_truth('left')[finite]).mean() < 1.5


def test_colour_left_image_is_matched_on_gray_and_colours_the_cloud(ros, raw_node, raw_outputs):
    proc, pubs, _, _ = raw_node
    got = ask_all(pubs, lambda sec: raw_pair_msgs('colour', sec, colour=True), raw_outputs,
                  'colour', log=proc.output)
    depth = image_to_numpy(got['depth'])
    assert_plane_depth(depth)
    finite = np.isfinite(depth)
    rgb = unpack_rgb(cloud_to_array(got['points']).reshape(depth.shape)['rgb'][finite])
    red, green, blue = (rgb[:, i].astype(int) for i in range(3))
    assert (red == COLOUR_RED).mean() > 0.99  # the constant channel, except at the border
    assert (np.abs(green + blue - 255) <= 1).all()  # green = 255 - blue, each rounded
    assert np.abs(blue - rectified_truth('left')[finite]).mean() < 1.5


def test_subsampled_depth_and_points_are_of_the_half_size_map(ros, raw_node, raw_outputs):
    proc, pubs, _, _ = raw_node
    assert all(r.successful for r in ros.set_parameters(RAW_NODE, {'subsampling': True}))
    try:
        got = ask_all(pubs, lambda sec: raw_pair_msgs('half', sec), raw_outputs, 'half',
                      log=proc.output)
    finally:
        ros.set_parameters(RAW_NODE, {'subsampling': False})
    depth = image_to_numpy(got['depth'])
    assert depth.shape == (PLANE_H // 2, PLANE_W // 2)
    assert_plane_depth(depth)
    assert_cloud_of_the_plane(got['points'], depth)


def test_dense_unpadded_cloud_without_colour(ros, raw_node, raw_outputs):
    proc, pubs, _, _ = raw_node
    layout = {'use_color': False, 'avoid_point_cloud_padding': True, 'dense_points': True}
    assert all(r.successful for r in ros.set_parameters(RAW_NODE, layout))
    try:
        got = ask_all(pubs, lambda sec: raw_pair_msgs('dense', sec), raw_outputs, 'dense',
                      log=proc.output)
    finally:
        ros.set_parameters(RAW_NODE, {name: not value for name, value in layout.items()})
    cloud = got['points']
    assert [(f.name, f.offset) for f in cloud.fields] == [('x', 0), ('y', 4), ('z', 8)]
    assert (cloud.point_step, cloud.height, cloud.is_dense) == (12, 1, True)
    depth = image_to_numpy(got['depth'])
    finite = np.isfinite(depth)
    assert cloud.width == finite.sum() and cloud.row_step == 12 * cloud.width
    np.testing.assert_allclose(cloud_to_array(cloud)['z'], depth[finite], rtol=1e-6)


def test_rectify_and_point_parameters_are_checked(ros, raw_node):
    with ros.changed_parameters(RAW_NODE, interpolation=3) as bad:  # image_proc's INTER_AREA
        assert not bad[0].successful \
            and "'3' is not one of nearest (0), linear (1), cubic (2)" in bad[0].reason
    with ros.changed_parameters(RAW_NODE, rectify=False) as ro:
        assert not ro[0].successful and 'read-only' in ro[0].reason


LOAD_NODE = '/load_test/disparity_node'
LOAD_TOPICS = tuple(t.replace('/stereo_test/', '/load_test/') for t in TOPICS)
LOAD_H, LOAD_W = 480, 640
LOAD_PAIR = stereo_pair(LOAD_H, LOAD_W, seed=3, max_disparity=24.0)
LOAD_FRAMES, LOAD_PERIOD_S = 120, 0.01


def load_reports(arrays: list[DiagnosticArray]) -> list[dict[str, str]]:
    """Return every diagnostics window of the load test's node in ``arrays``, as key -> value."""
    return [{kv.key: kv.value for kv in status.values}
            for array in arrays for status in array.status
            if status.name.startswith(LOAD_NODE)]


def test_under_load_the_newest_frames_are_answered_in_order_and_the_rest_counted(ros):
    """
    Pairs at 100 Hz to a node that takes longer: it answers the newest, in order.

    Each frame the node did not answer is counted in its diagnostics (skipped for a newer
    one, lost before the node or without a partner), and the last frame is answered. Everything
    is read by events and counts, never by the clock: the warm-up's windows end with the one
    that counts its last answer, the load's with the one that completes 120. How far behind the
    camera the answers are under overload (a backlog of queued frames would show as latency) is
    `cl-vision bench node`'s figure (answered share and p95 latency at 30-120 Hz).
    """
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       ['-r', '__ns:=/load_test', '-p', 'disp_max:=64',
                        '-p', 'diagnostics_period:=0.5'])
    try:
        pubs = [ros.publisher(Image if 'image' in t else CameraInfo, t) for t in LOAD_TOPICS]
        out = ros.collect(DisparityImage, '/load_test/disparity')
        diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
        assert ros.wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs)), \
            proc.output()
        # every window from here on reaches this process (a reliable, matched subscription)
        assert diagnostics.wait_for(lambda msgs: load_reports(msgs), 30.0), proc.output()
        tries = iter(range(10))

        def warm() -> str:
            tag = f'warm-{next(tries)}'  # each try its own answer: the last one ends the warm-up
            publish_each(pubs, stereo_msgs(tag, Clock.tick(), LOAD_PAIR.left, LOAD_PAIR.right))
            return tag
        publish_until_answered(warm, out, log=proc.output)
        warm_answers = sum(m.header.frame_id.startswith('warm-') for m in out.messages)
        # frames before the last try's answer are done or counted; the window counting its
        # answer closes the warm-up (the node counts a frame once it is published)
        assert diagnostics.wait_for(lambda msgs: sum(
            int(r['frames']) for r in load_reports(msgs)) == warm_answers, 30.0), \
            load_reports(diagnostics.messages)
        idle = len(diagnostics.messages)
        first_stamp = Clock.tick()
        for index in range(LOAD_FRAMES):
            publish_each(pubs, stereo_msgs(f'load-{index}', first_stamp + index,
                                           LOAD_PAIR.left, LOAD_PAIR.right))
            time.sleep(LOAD_PERIOD_S)
        last = f'load-{LOAD_FRAMES - 1}'
        assert out.wait_for(lambda msgs: any(m.header.frame_id == last for m in msgs), 30.0), \
            proc.output()

        def counted(msgs: list[DiagnosticArray]) -> int:
            return sum(int(r['frames']) + int(r['dropped']) for r in load_reports(msgs[idle:]))
        # every frame is the node's answer or its count of a drop, once: wait for all 120, then
        # two more windows, which must count none
        assert diagnostics.wait_for(lambda msgs: counted(msgs) >= LOAD_FRAMES, 30.0), \
            load_reports(diagnostics.messages[idle:])
        done = len(load_reports(diagnostics.messages))
        assert diagnostics.wait_for(lambda msgs: len(load_reports(msgs)) >= done + 2, 30.0)
        reports = load_reports(diagnostics.messages[idle:])
        answered = sum(int(r['frames']) for r in reports)
        indices = [int(m.header.frame_id.split('-')[1]) for m in out.messages
                   if m.header.frame_id.startswith('load-')]
        assert indices == sorted(set(indices)) and indices[-1] == LOAD_FRAMES - 1
        assert len(indices) >= 2, indices
        # an answer may still be lost on the way to this process (its reliable writer keeps the
        # last output_queue_size)
        assert counted(diagnostics.messages) == LOAD_FRAMES and answered >= len(indices), \
            reports
        assert sum(int(r['skipped_for_newer']) for r in reports) > 0, reports
    finally:
        assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()
