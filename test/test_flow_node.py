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
flow_node over real Fast DDS.

Flow of a known motion, stream resets, live method changes, the colour topic on demand, bad
input, and the span of each flow with max_span.
"""
from __future__ import annotations

from cl_vision_nodes.dataio.synthetic import flow_sequence, Motion
from cl_vision_nodes.flow.metrics import flow_errors
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest
from rosutil import image_to_numpy, NodeProcess, numpy_to_image, publish_until_answered
from sensor_msgs.msg import Image, TimeReference

pytestmark = pytest.mark.ros

NODE = 'flow_node'
RESET = 'flow history reset'
GAP_RESET = 'flow history reset: '
NS = 1_000_000_000
H, W = 48, 64
SEQ = flow_sequence(4, H, W, motion=Motion('translation', shift=(1.25, -0.5)), seed=3)


def frame(index: int, tag: str, sec: int, frames=SEQ.frames) -> Image:
    msg = numpy_to_image(frames[index], 'mono8')
    msg.header.frame_id = tag
    msg.header.stamp.sec = sec
    return msg


@pytest.fixture(scope='module')
def node(ros):
    proc = NodeProcess('cl_vision_nodes.ros.flow_node',
                       ['-p', 'method:=lk', '-p', 'pyramid_levels:=3',
                        '-p', 'diagnostics_period:=0.2',
                        # the cases send frames 1 s apart, more where one is sent again:
                        # max_span has its own case
                        '-p', 'max_span:=0.0',
                        '-r', 'image:=/flow_test/image', '-r', 'flow:=/flow_test/flow',
                        '-r', 'flow/color:=/flow_test/flow/color',
                        '-r', 'flow/span:=/flow_test/flow/span'])
    pub = ros.publisher(Image, '/flow_test/image', 10)
    out = ros.collect(Image, '/flow_test/flow')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    assert ros.wait_until(lambda: pub.get_subscription_count() > 0
                          and diagnostics.publisher_count() > 0), proc.output()
    start_stream(pub, diagnostics, proc)
    yield proc, pub, out
    assert proc.stop() == 0, proc.output()
    assert 'Traceback' not in proc.output()


def start_stream(pub, diagnostics, proc: NodeProcess) -> None:
    """
    Give the node its first frame: from then on every frame it takes is observable.

    Each one gives a flow or a logged stream reset, see ``send_pair``; the first one shows only in
    its diagnostics.
    """
    def counted(msgs) -> bool:
        return any(kv.key == 'frames' and int(kv.value) > 0 for m in msgs for s in m.status
                   if s.name.startswith(f'/{NODE}') for kv in s.values)
    for sec in range(3):  # resent only if lost in transport
        pub.publish(frame(0, 'primer', sec))
        if diagnostics.wait_for(counted, timeout=10.0):
            return
    raise AssertionError(f'the node never counted a frame:\n{proc.output()}')


class Clock:
    """Strictly increasing stamps for the frames a test sends."""

    sec = 100

    @classmethod
    def tick(cls) -> int:
        cls.sec += 1
        return cls.sec


def answered(msg: Image):
    """Predicate on the flows received: the one computed for ``msg`` (tag and stamp)."""
    key = (msg.header.frame_id, msg.header.stamp.sec)
    return lambda msgs: next((m for m in msgs
                              if (m.header.frame_id, m.header.stamp.sec) == key), None)


def send_pair(ros, node, first: Image, second: Image) -> Image:
    """
    Send a frame and, once the node has taken it, its successor; return the successor's flow.

    A second frame sent before would overwrite the first in the keep-last-1 queue. The node has
    taken ``first`` when it answers for it or logs the stream reset that ``first`` starts (the node
    fixture gave it a stream, so one of the two always happens).
    """
    proc, pub, out = node

    def publish():
        first.header.stamp.sec, second.header.stamp.sec = Clock.tick(), Clock.tick()
        resets = proc.output().count(RESET)
        pub.publish(first)
        if not ros.wait_until(lambda: answered(first)(list(out.messages))
                              or proc.output().count(RESET) > resets, timeout=15.0):
            return False  # lost in transport: send the pair again
        pub.publish(second)
        return lambda flow: answered(second)([flow]) is not None
    return publish_until_answered(
        publish, out, tries=5, timeout=15.0,
        log=lambda: f'no flow for {second.header.frame_id}:\n{proc.output()}')


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
    pub.publish(frame(0, 'size-change', Clock.tick(), small))
    assert proc.wait_for_output(f'{RESET} (mono8 {W}x{H} -> mono8 {W // 2}x{H // 2})', 10.0), \
        proc.output()
    got = send_pair(ros, node, frame(0, 's0', 0, small), frame(1, 's1', 0, small))
    assert (got.height, got.width) == (H // 2, W // 2)
    # Nothing for 'size-change': the node publishes flows in the order it takes frames, on one
    # reliable publisher, so one for 'size-change' would have come before those of s0 and s1.
    assert not any(m.header.frame_id == 'size-change' for m in out.messages)


def test_method_change_applies_to_the_next_frame(ros, node):
    with ros.changed_parameters(NODE, method='bm', subpixel=False, block_size=4) as results:
        assert all(r.successful for r in results), results
        flow = image_to_numpy(send_pair(ros, node, frame(1, 'b1', 0), frame(2, 'b2', 0)))
    assert ros.get_parameters(NODE, ['method', 'block_size']) == {'method': 'lk', 'block_size': 8}
    finite = flow[np.isfinite(flow)]
    assert finite.size and np.array_equal(finite, np.round(finite))  # whole-pixel block vectors


def test_auto_runs_dis_on_pocl_says_so_and_applies_from_the_next_frame(ros, node):
    proc = node[0]
    assert 'flow method: lk' in proc.output()  # the explicit method, never overridden
    with ros.changed_parameters(NODE, method='auto') as results:
        assert all(r.successful for r in results), results
        assert proc.wait_for_output('flow method: dis (method auto on a CPU device', 10.0), \
            proc.output()
        flow = image_to_numpy(send_pair(ros, node, frame(1, 'd1', 0), frame(2, 'd2', 0)))
    assert np.isfinite(flow).all()  # dis has an estimate everywhere (lk leaves NaN)
    assert flow_errors(flow, SEQ.flows[1], SEQ.valid[1]).epe < 0.3
    assert proc.wait_for_output('flow method: lk\n', 10.0)


@pytest.mark.parametrize('change, reason', [
    ({'window_size': 14}, 'odd'),
    ({'dis_patch_stride': 12}, 'larger than dis_patch_size'),
    ({'dis_patch_size': 10}, 'dis_patch_size'),
    ({'method': 'farneback'}, 'not one of'),
    ({'alpha': -1.0}, 'alpha'),
])
def test_invalid_parameters_are_refused(ros, node, change, reason):
    with ros.changed_parameters(NODE, **change) as results:
        assert not results[0].successful and reason in results[0].reason, results[0].reason


def test_color_topic_when_subscribed(ros, node):
    color = ros.collect(Image, '/flow_test/flow/color')
    assert ros.wait_until(lambda: color.publisher_count() > 0)

    def flow_of_a_new_pair():  # the node may see the new subscriber a moment after we see it
        flow = send_pair(ros, node, frame(2, 'c2', 0), frame(3, 'c3', 0))
        return lambda picture: answered(flow)([picture]) is not None
    got = publish_until_answered(flow_of_a_new_pair, color, tries=3, timeout=5.0,
                                 log=node[0].output)
    assert got.encoding == 'bgr8' and (got.height, got.width) == (H, W)
    assert image_to_numpy(got).std() > 0


def test_bad_frame_is_skipped_and_stream_continues(ros, node):
    proc, pub, out = node
    field = numpy_to_image(np.zeros((H, W, 2), np.float32), '32FC2')
    for _ in range(20):  # keep-last-1 best effort: resend until the node has seen it
        pub.publish(field)
        if ros.wait_until(lambda: 'two-channel field' in proc.output(), timeout=1.0):
            break
    assert 'two-channel field' in proc.output(), proc.output()
    resets = proc.output().count(RESET)
    got = send_pair(ros, node, frame(0, 'd0', 0), frame(1, 'd1', 0))
    assert got.header.frame_id == 'd1' and proc.alive()
    assert proc.output().count(RESET) == resets  # the bad frame left no trace


def node_values(diagnostics, key: str, since: int = 0) -> list[str]:
    """Return the values of ``key`` in flow_node's diagnostics from message ``since`` on."""
    return [kv.value for m in diagnostics.messages[since:] for s in m.status
            if s.name.startswith(f'/{NODE}') for kv in s.values if kv.key == key]


def take(ros, node, msg: Image, taken) -> None:
    """Publish ``msg`` until the node has ``taken`` it (best effort: a frame may be lost)."""
    for _ in range(3):
        node[1].publish(msg)
        if ros.wait_until(taken, timeout=10.0):
            return
    raise AssertionError(f'{msg.header.frame_id} never taken:\n{node[0].output()}')


def test_flows_across_dropped_frames_carry_their_span_and_max_span_resets(ros, node):
    """
    Frames 0.1 s apart, every third withheld: spans of 0.1 and 0.2 s, the 0.2 s ones long.

    Then with max_span 0.15 s a frame after a withheld one starts a new history (no flow, one
    log line for both, counted), and the next frame has a flow from it again.
    """
    proc, pub, out = node
    spans = ros.collect(TimeReference, '/flow_test/flow/span')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
    assert ros.wait_until(lambda: spans.publisher_count() > 0
                          and diagnostics.publisher_count() > 0)
    start_ns = send_pair(ros, node, frame(0, 'g0', 0), frame(1, 'g1', 0)).header.stamp.sec * NS
    Clock.sec += 2  # later cases stamp after the frames below
    seen = len(diagnostics.messages)
    assert diagnostics.wait_for(lambda msgs: len(msgs) >= seen + 3, timeout=10.0)
    since = len(diagnostics.messages)  # windows from here on hold only the frames below
    sent: dict[int, Image] = {}

    def total(key: str) -> int:
        return sum(map(int, node_values(diagnostics, key, since)))

    def send(k: int, resets: int = 0) -> None:
        """Send frame k (stamp start + 0.1 k s); wait for its flow, or until ``resets`` resets."""
        msg = sent[k] = frame(k % len(SEQ.frames), f'span{k}', 0)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(start_ns + k * NS // 10, NS)
        if resets:
            take(ros, node, msg, lambda: total('flow_history_resets_gap') >= resets)
        else:
            take(ros, node, msg, lambda: answered(msg)(list(out.messages)))

    def span_of(k: int) -> TimeReference:
        stamp = sent[k].header.stamp
        got = spans.wait_for(lambda msgs: next((m for m in msgs if m.header.stamp == stamp),
                                               None), timeout=10.0)
        assert got is not None and got.header.frame_id == f'span{k}', got
        assert got.source == 'previous frame'
        return got

    for k in (1, 3, 4, 6, 7):
        send(k)
    assert [span_of(k).time_ref for k in (3, 4, 6, 7)] == \
        [sent[k].header.stamp for k in (1, 3, 4, 6)]
    first = span_of(1).time_ref
    assert first.sec * NS + first.nanosec == start_ns  # from g1, 0.1 s before
    # each of these frames continues the stream: its work was enqueued once the previous one's
    # flow was out (flow_ran_ahead), as every frame's where frames come one after the other
    assert ros.wait_until(lambda: (total('flow_spans'), total('flow_spans_long'),
                                   total('flow_ran_ahead')) == (5, 2, 5),
                          timeout=10.0), diagnostics.messages[since:]
    assert max(map(float, node_values(diagnostics, 'flow_span_max_s', since))) == 0.2
    assert node_values(diagnostics, 'flow_period_s', since)[-1] == '0.100000'

    with ros.changed_parameters(NODE, max_span=0.15) as results:
        assert results[0].successful, results[0].reason
        send(8)  # 0.1 s after frame 7
        send(10, resets=1)
        send(11)
        send(13, resets=2)
        send(14)
    assert span_of(8).time_ref == sent[7].header.stamp
    assert span_of(11).time_ref == sent[10].header.stamp
    assert span_of(14).time_ref == sent[13].header.stamp
    # one reliable publisher, in order: flows for 10 or 13 would have come before 11's and 14's
    assert not any(m.header.frame_id in ('span10', 'span13') for m in out.messages)
    assert proc.output().count(GAP_RESET) == 1, proc.output()
    assert f'{GAP_RESET}0.20 s since the previous frame is more than max_span 0.15 s ' \
        '(logged once; counted in diagnostics)' in proc.output()
