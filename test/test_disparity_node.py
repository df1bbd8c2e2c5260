"""disparity_node over real Fast DDS: synchronised pairs give the library's disparity in a
correct DisparityImage; bad pairs and missing calibration are logged, never published."""
from __future__ import annotations

import math

import numpy as np
import pytest
from sensor_msgs.msg import CameraInfo, Image
from stereo_msgs.msg import DisparityImage

from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.elas.matcher import ElasMatcher
from cl_vision_nodes.opencl.runtime import ClRuntime
from cl_vision_nodes.ros.image_conversion import image_to_numpy, numpy_to_image
from rosutil import NodeProcess, RosHarness

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
        msgs += [info(False, left.shape[1], left.shape[0]), info(True, right.shape[1],
                                                                   right.shape[0])]
    for i, m in enumerate(msgs):
        m.header.frame_id = tag
        m.header.stamp.sec = sec
        m.header.stamp.nanosec = right_offset_ns if i in (1, 3) else 0
    return msgs


@pytest.fixture(scope='module')
def ros():
    harness = RosHarness('stereo_test_harness')
    yield harness
    harness.close()


@pytest.fixture(scope='module')
def node(ros):
    remaps = [a for t, n in zip(TOPICS, ('left/image_rect', 'right/image_rect',
                                         'left/camera_info', 'right/camera_info'))
              for a in ('-r', f'{n}:={t}')]
    proc = NodeProcess('cl_vision_nodes.ros.disparity_node',
                       [*remaps, '-p', 'disp_max:=32', '-r', 'disparity:=/stereo_test/disparity',
                        '-r', 'disparity/color:=/stereo_test/disparity/color'])
    pubs = [ros.publisher(Image if 'image' in t else CameraInfo, t) for t in TOPICS]
    out = ros.collect(DisparityImage, '/stereo_test/disparity')
    assert ros.wait_until(lambda: all(p.get_subscription_count() > 0 for p in pubs)), \
        proc.output()
    yield proc, pubs, out
    assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()


class Clock:
    sec = 1000

    @classmethod
    def next(cls) -> int:
        cls.sec += 1
        return cls.sec


def ask(ros, node, tag: str, **kwargs) -> DisparityImage | None:
    proc, pubs, out = node
    for _ in range(4):
        for pub, msg in zip(pubs, stereo_msgs(tag, Clock.next(), **kwargs)):
            pub.publish(msg)
        got = out.wait_for(lambda msgs: next((m for m in msgs if m.header.frame_id == tag),
                                             None), timeout=10.0)
        if got is not None:
            return got
    return None


def test_disparity_image_fields_and_values(ros, node):
    got = ask(ros, node, 'pair-1')
    assert got is not None, node[0].output()
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
    window = got.valid_window
    rows, cols = np.flatnonzero(valid.any(1)), np.flatnonzero(valid.any(0))
    assert (window.x_offset, window.y_offset) == (cols[0], rows[0])
    assert (window.width, window.height) == (cols[-1] - cols[0] + 1, rows[-1] - rows[0] + 1)


def test_size_mismatch_is_logged_not_published(ros, node):
    proc, _, out = node
    got = ask(ros, node, 'mismatch', right=PAIR.right[:, :W - 8])
    assert got is None and proc.alive()
    assert 'expected a rectified pair' in proc.output()
    assert ask(ros, node, 'after-mismatch') is not None


def test_missing_camera_info_is_reported(ros, node):
    proc, pubs, _ = node
    for _ in range(8):
        for pub, msg in zip(pubs, stereo_msgs('no-info', Clock.next(), infos=False)):
            pub.publish(msg)
    assert ros.wait_until(lambda: 'found no partner' in proc.output(), timeout=15.0), \
        proc.output()
    assert ask(ros, node, 'after-no-info') is not None


def test_camera_info_that_is_not_finite_is_refused_with_a_warning(ros, node):
    proc, pubs, out = node
    warning = 'right camera_info P is not finite ([nan, nan'
    for _ in range(15):  # bad-input warnings are throttled: a previous test's may hold it back
        msgs = stereo_msgs('nan-info', Clock.next())
        msgs[3].p = [math.nan] * 12
        for pub, msg in zip(pubs, msgs):
            pub.publish(msg)
        if ros.wait_until(lambda: warning in proc.output(), timeout=1.0):
            break
    assert warning in proc.output(), proc.output()
    assert not any(m.header.frame_id == 'nan-info' for m in out.messages)
    assert ask(ros, node, 'after-nan-info') is not None


def test_subsampling_publishes_a_consistent_half_size_disparity_image(ros, node):
    results = ros.set_parameters(NODE, {'subsampling': True})
    assert all(r.successful for r in results), results
    try:
        got = ask(ros, node, 'subsampled')
    finally:
        ros.set_parameters(NODE, {'subsampling': False})
    assert got is not None, node[0].output()
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
    results = ros.set_parameters(NODE, {'disp_max': 20})
    assert all(r.successful for r in results), results
    got = ask(ros, node, 'narrow')
    assert got is not None and got.max_disparity == 20.0
    bad = ros.set_parameters(NODE, {'disp_min': 30})
    assert not bad[0].successful and 'disp' in bad[0].reason
    ro = ros.set_parameters(NODE, {'approximate_sync': True})
    assert not ro[0].successful and 'read-only' in ro[0].reason
    ros.set_parameters(NODE, {'disp_max': 32})


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
        assert got is not None, proc.output()
        assert got.header.stamp.nanosec == 0  # the left image's header
    finally:
        assert proc.stop() == 0, proc.output()
