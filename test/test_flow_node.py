"""flow_node over real Fast DDS: flow of a known motion, stream resets, live method changes,
the colour topic on demand and bad input."""
from __future__ import annotations

import numpy as np
import pytest
from sensor_msgs.msg import Image

from cl_vision_nodes.dataio.synthetic import Motion, flow_sequence
from cl_vision_nodes.flow.metrics import flow_errors
from cl_vision_nodes.ros.image_conversion import image_to_numpy, numpy_to_image
from rosutil import NodeProcess, RosHarness

NODE = 'flow_node'
H, W = 48, 64
SEQ = flow_sequence(4, H, W, motion=Motion('translation', shift=(1.25, -0.5)), seed=3)


def frame(index: int, tag: str, sec: int, frames=SEQ.frames) -> Image:
    msg = numpy_to_image(frames[index], 'mono8')
    msg.header.frame_id = tag
    msg.header.stamp.sec = sec
    return msg


@pytest.fixture(scope='module')
def ros():
    harness = RosHarness('flow_test_harness')
    yield harness
    harness.close()


@pytest.fixture(scope='module')
def node(ros):
    proc = NodeProcess('cl_vision_nodes.ros.flow_node',
                       ['-p', 'method:=lk', '-p', 'pyramid_levels:=3',
                        '-r', 'image:=/flow_test/image', '-r', 'flow:=/flow_test/flow',
                        '-r', 'flow/color:=/flow_test/flow/color'])
    pub = ros.publisher(Image, '/flow_test/image', 10)
    out = ros.collect(Image, '/flow_test/flow')
    assert ros.wait_until(lambda: pub.get_subscription_count() > 0), proc.output()
    yield proc, pub, out
    assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()


class Clock:
    """Strictly increasing stamps for the frames a test sends."""
    sec = 100

    @classmethod
    def next(cls) -> int:
        cls.sec += 1
        return cls.sec


def send_pair(ros, node, first: Image, second: Image) -> Image:
    """Send a frame and its successor until the node answers for the successor."""
    proc, pub, out = node
    tag = second.header.frame_id
    for _ in range(5):
        first.header.stamp.sec, second.header.stamp.sec = Clock.next(), Clock.next()
        pub.publish(first)
        ros.wait_until(lambda: False, timeout=0.3)
        pub.publish(second)
        got = out.wait_for(lambda msgs: next((m for m in msgs if m.header.frame_id == tag), None),
                           timeout=15.0)
        if got is not None:
            return got
    raise AssertionError(f'no flow for {tag}:\n{proc.output()}')


def test_flow_of_a_translation_has_the_current_header_and_small_error(ros, node):
    got = send_pair(ros, node, frame(0, 'a0', 0), frame(1, 'a1', 0))
    assert got.encoding == '32FC2' and (got.height, got.width) == (H, W)
    assert got.header.frame_id == 'a1'
    flow = image_to_numpy(got)
    epe = flow_errors(flow, SEQ.flows[0], SEQ.valid[0]).epe
    assert epe < 0.3, epe


def test_first_frame_and_size_change_publish_nothing(ros, node):
    proc, pub, out = node
    small = [f[:H // 2, :W // 2].copy() for f in SEQ.frames]
    msg = frame(0, 'size-change', Clock.next(), small)
    pub.publish(msg)
    assert out.wait_for(lambda msgs: any(m.header.frame_id == 'size-change' for m in msgs),
                        timeout=3.0) is None
    assert ros.wait_until(lambda: 'flow history reset' in proc.output(), timeout=10.0), \
        proc.output()
    got = send_pair(ros, node, frame(0, 's0', 0, small), frame(1, 's1', 0, small))
    assert (got.height, got.width) == (H // 2, W // 2)


def test_method_change_applies_to_the_next_frame(ros, node):
    results = ros.set_parameters(NODE, {'method': 'bm', 'subpixel': False, 'block_size': 4})
    assert all(r.successful for r in results), results
    flow = image_to_numpy(send_pair(ros, node, frame(1, 'b1', 0), frame(2, 'b2', 0)))
    finite = flow[np.isfinite(flow)]
    assert finite.size and np.array_equal(finite, np.round(finite))  # whole-pixel block vectors
    ros.set_parameters(NODE, {'method': 'lk', 'subpixel': True, 'block_size': 8})


@pytest.mark.parametrize('change, reason', [
    ({'window_size': 14}, 'odd'),
    ({'method': 'farneback'}, 'not one of'),
    ({'alpha': -1.0}, 'alpha'),
])
def test_invalid_parameters_are_refused(ros, node, change, reason):
    results = ros.set_parameters(NODE, change)
    assert not results[0].successful and reason in results[0].reason, results[0].reason


def test_color_topic_when_subscribed(ros, node):
    color = ros.collect(Image, '/flow_test/flow/color')
    proc, pub, _ = node
    assert ros.wait_until(lambda: pub.get_subscription_count() > 0)
    send_pair(ros, node, frame(2, 'c2', 0), frame(3, 'c3', 0))
    got = color.wait_for(lambda msgs: next((m for m in msgs if m.header.frame_id == 'c3'), None))
    assert got is not None and got.encoding == 'bgr8' and (got.height, got.width) == (H, W)
    assert image_to_numpy(got).std() > 0


def test_bad_frame_is_skipped_and_stream_continues(ros, node):
    proc, pub, out = node
    field = numpy_to_image(np.zeros((H, W, 2), np.float32), '32FC2')
    for _ in range(20):  # keep-last-1 best effort: resend until the node has seen it
        pub.publish(field)
        if ros.wait_until(lambda: 'two-channel field' in proc.output(), timeout=1.0):
            break
    assert 'two-channel field' in proc.output(), proc.output()
    resets = proc.output().count('flow history reset')
    got = send_pair(ros, node, frame(0, 'd0', 0), frame(1, 'd1', 0))
    assert got.header.frame_id == 'd1' and proc.alive()
    assert proc.output().count('flow history reset') == resets  # the bad frame left no trace
