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
vision_pipeline over real Fast DDS, against the separate nodes fed the same frames.

One publisher feeds a pipeline node (namespace /pipe) and flow_node, surf_node and
disparity_node (namespace /sep, their inputs remapped to the pipeline's). Their outputs must be
the same: disparity and keypoints exactly, flow within float tolerance. Capabilities switch off
and on while running; parameters live in their capability's namespace; without stereo inputs
disparity cannot be enabled.
"""
from __future__ import annotations

import itertools
import threading
import time

from cl_vision_nodes.bags.datasets import Dataset, Frame, write_bag
from cl_vision_nodes.bags.layout import StereoCamera
from cl_vision_nodes.dataio.synthetic import stereo_pair
from cl_vision_nodes.ros.keypoint_cloud import cloud_to_array
from cl_vision_nodes.tuning.evaluator import Evaluator
from cl_vision_nodes.tuning.frames import load_frames
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from plane_scene import Clock
import pytest
from rosutil import (image_to_numpy, NodeProcess, numpy_to_image, publish_each,
                     publish_until_answered)
from sensor_msgs.msg import CameraInfo, Image, PointCloud2, TimeReference
from stereo_msgs.msg import DisparityImage

pytestmark = pytest.mark.ros

H, W = 96, 128
PAIR = stereo_pair(H, W, seed=5, max_disparity=12.0)
FRAMES = [(np.roll(PAIR.left, shift, axis=1), np.roll(PAIR.right, shift, axis=1))
          for shift in (0, 2, 4, 6, 8, 10)]
FX, BASELINE = 100.0, 0.25
INPUTS = ('left/image_rect', 'right/image_rect', 'left/camera_info', 'right/camera_info')
PIPELINE = '/pipe/vision_pipeline'
OUTPUTS = {'flow': Image, 'flow/color': Image, 'flow/span': TimeReference,
           'keypoints': PointCloud2, 'keypoints/image': Image, 'disparity': DisparityImage,
           'disparity/color': Image}


def info(right: bool) -> CameraInfo:
    msg = CameraInfo(width=W, height=H)
    msg.p = [FX, 0.0, W / 2, -FX * BASELINE if right else 0.0,
             0.0, FX, H / 2, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def frame_msgs(tag: str, index: int) -> list:
    left, right = FRAMES[index]
    msgs = [numpy_to_image(left, 'mono8'), numpy_to_image(right, 'mono8'), info(False),
            info(True)]
    stamp = Clock.tick()
    for msg in msgs:
        msg.header.frame_id = tag
        msg.header.stamp.sec = stamp
    return msgs


@pytest.fixture(scope='module')
def setup(ros):
    inputs = [a for topic in INPUTS for a in ('-r', f'{topic}:=/pipe/{topic}')]
    procs = [NodeProcess('cl_vision_nodes.ros.vision_pipeline',
                         ['-r', '__ns:=/pipe', '-p', 'disparity.disp_max:=32']),
             NodeProcess('cl_vision_nodes.ros.flow_node',
                         ['-r', '__ns:=/sep', '-r', 'image:=/pipe/left/image_rect']),
             NodeProcess('cl_vision_nodes.ros.surf_node',
                         ['-r', '__ns:=/sep', '-r', 'image:=/pipe/left/image_rect']),
             NodeProcess('cl_vision_nodes.ros.disparity_node',
                         ['-r', '__ns:=/sep', '-p', 'disp_max:=32', *inputs])]
    pubs = [ros.publisher(Image if 'image' in t else CameraInfo, f'/pipe/{t}') for t in INPUTS]
    out = {(ns, topic): ros.collect(msg_type, f'/{ns}/{topic}')
           for ns in ('pipe', 'sep') for topic, msg_type in OUTPUTS.items()}
    # the left image goes to all four processes: flow_node must see the first frame too
    assert ros.wait_until(lambda: pubs[0].get_subscription_count() >= 4
                          and all(p.get_subscription_count() >= 2 for p in pubs[1:]), 60.0), \
        '\n'.join(p.output() for p in procs)
    yield procs, pubs, out
    for proc in procs:
        assert proc.stop() == 0, proc.output()
        assert 'Traceback' not in proc.output()


def send(setup, tag: str, index: int, wait_for: list[tuple[str, str]]) -> dict:
    """Publish frame ``index`` tagged ``tag`` until every (ns, topic) answered; the answers."""
    procs, pubs, out = setup
    return publish_until_answered(lambda: publish_each(pubs, frame_msgs(tag, index)),
                                  {key: out[key] for key in wait_for}, tag, tries=5,
                                  timeout=15.0,
                                  log=lambda: '\n'.join(p.output() for p in procs))


def published(setup, key: tuple[str, str], tag: str) -> bool:
    return any(m.header.frame_id == tag for m in setup[2][key].messages)


EVERY = [(ns, topic) for ns in ('pipe', 'sep') for topic in ('flow', 'keypoints', 'disparity')]


ANSWERS = ('disparity', 'flow', 'keypoints')
PICTURES = ('disparity/color', 'flow/color', 'keypoints/image')


def test_every_answer_of_a_frame_is_written_before_any_of_its_pictures(ros, setup):
    """
    Pictures (and depth, points) never delay another capability's answer.

    The DDS source timestamps of one frame's messages: the three answers' are all earlier than
    every picture's (one publishing thread writes them in the order they were handed over).
    """
    written: dict[tuple[str, str], int] = {}

    def note(topic: str):
        def callback(msg, info) -> None:
            written[(topic, msg.header.frame_id)] = info['source_timestamp']
        return callback
    subscriptions = [ros.node.create_subscription(OUTPUTS[t], f'/pipe/{t}', note(t), 10)
                     for t in ANSWERS + PICTURES]
    try:
        send(setup, 'order-first', 2, [('pipe', 'disparity'), ('pipe', 'keypoints')])
        send(setup, 'order', 3, [('pipe', t) for t in ANSWERS + PICTURES])
        assert ros.wait_until(lambda: all((t, 'order') in written for t in ANSWERS + PICTURES))
        answers = max(written[(t, 'order')] for t in ANSWERS)
        assert all(written[(t, 'order')] > answers for t in PICTURES), written
    finally:
        for subscription in subscriptions:
            ros.node.destroy_subscription(subscription)


def test_alternating_frames_each_answered_with_their_own_data(setup):
    """
    The capabilities run side by side on one decoded frame, each on its own queue.

    Two different frames in turn: every answer of the pipeline equals the separate nodes' answer
    to the same frame, so none carries another frame's data.
    """
    send(setup, 'alt-start', 5, [('pipe', 'disparity'), ('sep', 'disparity')])
    for k, index in enumerate((0, 5, 0, 5)):
        got = send(setup, f'alt{k}', index, EVERY)
        pipe_d, sep_d = (image_to_numpy(got[(ns, 'disparity')].image) for ns in ('pipe', 'sep'))
        assert pipe_d.tobytes() == sep_d.tobytes(), k
        pipe_kp, sep_kp = (cloud_to_array(got[(ns, 'keypoints')]) for ns in ('pipe', 'sep'))
        assert len(pipe_kp) and pipe_kp.tobytes() == sep_kp.tobytes(), k
        pipe_flow, sep_flow = (image_to_numpy(got[(ns, 'flow')]) for ns in ('pipe', 'sep'))
        np.testing.assert_allclose(pipe_flow, sep_flow, atol=1e-4, equal_nan=True)
        assert abs(np.nanmedian(pipe_flow[..., 0])) > 5.0  # 10 px one way, then back


def test_outputs_equal_the_separate_nodes(setup):
    send(setup, 'first', 0, [('pipe', 'disparity'), ('sep', 'disparity'), ('pipe', 'keypoints'),
                             ('sep', 'keypoints')])
    got = send(setup, 'second', 1, EVERY + [('pipe', 'flow/color'), ('pipe', 'keypoints/image'),
                                            ('pipe', 'disparity/color'), ('pipe', 'flow/span'),
                                            ('sep', 'flow/span')])
    pipe_flow, sep_flow = (image_to_numpy(got[(ns, 'flow')]) for ns in ('pipe', 'sep'))
    assert pipe_flow.shape == (H, W, 2)
    np.testing.assert_array_equal(np.isnan(pipe_flow), np.isnan(sep_flow))
    np.testing.assert_allclose(pipe_flow, sep_flow, atol=1e-4, equal_nan=True)
    assert np.nanmedian(pipe_flow[..., 0]) > 1.0  # the 2 px pan is seen
    pipe_span, sep_span = (got[(ns, 'flow/span')] for ns in ('pipe', 'sep'))
    assert pipe_span == sep_span and pipe_span.header == got[('pipe', 'flow')].header
    assert pipe_span.time_ref.sec < pipe_span.header.stamp.sec  # from an earlier frame
    pipe_kp, sep_kp = (cloud_to_array(got[(ns, 'keypoints')]) for ns in ('pipe', 'sep'))
    assert len(pipe_kp) > 5
    assert pipe_kp.tobytes() == sep_kp.tobytes()
    pipe_d, sep_d = (image_to_numpy(got[(ns, 'disparity')].image) for ns in ('pipe', 'sep'))
    np.testing.assert_array_equal(pipe_d, sep_d)
    for field in ('f', 't', 'min_disparity', 'max_disparity', 'delta_d'):
        assert getattr(got[('pipe', 'disparity')], field) == \
            getattr(got[('sep', 'disparity')], field)
    for topic in ('flow/color', 'keypoints/image', 'disparity/color'):
        picture = got[('pipe', topic)]
        assert (picture.encoding, picture.height, picture.width) == ('bgr8', H, W)


def test_the_tune_evaluator_answers_as_the_pipeline_does(setup, tmp_path):
    """
    cl-vision tune's evaluator (no ROS) and the running pipeline, on the same frames: one answer.

    Frames 2-5 go to the pipeline in order, each answered before the next; the same frames as a
    bag are tune's (2-3 its tuning half, 4-5 held out). Each half starts a flow stream, so the
    flows compared are those into frames 3 and 5.
    """
    keys = [('pipe', 'flow'), ('pipe', 'keypoints'), ('pipe', 'disparity')]
    node = [send(setup, f'tune-{index}', index, keys) for index in (2, 3, 4, 5)]
    frames = [Frame(*FRAMES[index]) for index in (2, 3, 4, 5)]
    write_bag(Dataset('test', StereoCamera(FX, BASELINE), frames), tmp_path / 'bag', 'mcap', 1.0)
    evaluator = Evaluator('auto', load_frames(tmp_path / 'bag', 'vision_pipeline', None))
    tune = [evaluator.answers({'disparity.disp_max': 32}, part) for part in ('tuning', 'held_out')]
    for got, (part, index) in zip(node, [(0, 0), (0, 1), (1, 0), (1, 1)]):
        answers = tune[part]
        np.testing.assert_array_equal(image_to_numpy(got[('pipe', 'disparity')].image),
                                      answers['disparity'][index])
        assert cloud_to_array(got[('pipe', 'keypoints')]).tobytes() == \
            answers['surf'][index].to_structured().tobytes()
        if index == 1:
            np.testing.assert_array_equal(image_to_numpy(got[('pipe', 'flow')]),
                                          answers['flow'][index])
        else:
            assert answers['flow'][index] is None  # tune's stream starts at each half


def test_capabilities_switch_off_and_on_while_running(ros, setup):
    send(setup, 'warm', 2, [('pipe', 'flow'), ('pipe', 'keypoints')])
    with ros.changed_parameters(PIPELINE, **{'surf.enabled': False}) as results:
        assert all(r.successful for r in results)
        send(setup, 'surf-off', 3, [('pipe', 'disparity'), ('pipe', 'flow')])
    send(setup, 'surf-on', 4, [('pipe', 'keypoints')])
    # one reliable publisher, in order: keypoints of surf-off would have come before surf-on's
    assert not published(setup, ('pipe', 'keypoints'), 'surf-off')
    with ros.changed_parameters(PIPELINE, **{'flow.enabled': False, 'disparity.enabled': False}):
        send(setup, 'flow-off', 5, [('pipe', 'keypoints')])
    send(setup, 'restart', 0, [('pipe', 'disparity'), ('pipe', 'keypoints')])
    send(setup, 'flow-on', 1, [('pipe', 'flow'), ('pipe', 'disparity')])
    for tag in ('flow-off', 'restart'):  # off, then the first frame of a new stream
        assert not published(setup, ('pipe', 'flow'), tag)
    assert not published(setup, ('pipe', 'disparity'), 'flow-off')


def test_parameters_are_namespaced_per_capability(ros, setup):
    described = ros.describe_parameters(PIPELINE)
    assert {'flow.method', 'surf.hessian_threshold', 'disparity.disp_max', 'flow.enabled',
            'stereo', 'device'} <= set(described)
    assert 'method' not in described and described['stereo'].read_only
    with ros.changed_parameters(PIPELINE, **{'flow.method': 'lk'}) as results:
        assert results[0].successful, results[0].reason
        assert ros.get_parameters(PIPELINE, ['flow.method']) == {'flow.method': 'lk'}
    refused = ros.set_parameters(PIPELINE, {'surf.hessian_threshold': -1.0})[0]
    assert not refused.successful and 'hessian_threshold' in refused.reason
    refused = ros.set_parameters(PIPELINE, {'disparity.disp_min': 40})[0]
    assert not refused.successful and 'disp_max' in refused.reason, refused.reason


def test_mono_inputs_refuse_disparity_at_start():
    proc = NodeProcess('cl_vision_nodes.ros.vision_pipeline',
                       ['-r', '__ns:=/mono_refused', '-p', 'stereo:=false'])
    assert proc.proc.wait(60) == 2, proc.output()
    assert 'disparity.enabled needs stereo inputs' in proc.output()


def test_mono_inputs_run_flow_and_surf(ros):
    proc = NodeProcess('cl_vision_nodes.ros.vision_pipeline',
                       ['-r', '__ns:=/mono', '-p', 'stereo:=false', '-p',
                        'disparity.enabled:=false', '-p', 'diagnostics_period:=0.2'])
    try:
        pub = ros.publisher(Image, '/mono/image')
        flow = ros.collect(Image, '/mono/flow')
        keypoints = ros.collect(PointCloud2, '/mono/keypoints')
        diagnostics = ros.collect(DiagnosticArray, '/diagnostics')
        assert ros.wait_until(lambda: pub.get_subscription_count() > 0, 60.0), proc.output()
        indices = itertools.count()

        def publish() -> None:
            index = next(indices)
            msg = numpy_to_image(FRAMES[index % 2][0], 'mono8')
            msg.header.frame_id = f'mono{index}'
            pub.publish(msg)
        publish_until_answered(publish, flow, lambda _: True, tries=8, timeout=2.0,
                               log=proc.output)
        assert keypoints.wait_for(lambda msgs: msgs, timeout=10.0), proc.output()  # after flow
        assert diagnostics.wait_for(lambda msgs: [  # flow_node's keys, flow's flows counted
            kv for m in msgs for s in m.status if s.name.startswith('/mono/vision_pipeline')
            for kv in s.values if kv.key == 'flow_spans' and int(kv.value) > 0], timeout=10.0)
    finally:
        assert proc.stop() == 0, proc.output()


def test_answers_stay_each_frames_own_while_capabilities_switch_under_a_stream(ros, setup):
    """
    Frames stream at 20 Hz while SURF, then flow and disparity, go off and on.

    Parameter changes land between frames (the frame thread holds them off while one runs):
    every answer the pipeline gives equals the separate nodes' answer to the same frame, flow
    wherever both estimated it from the same earlier frame (their spans agree).
    """
    procs, pubs, out = setup
    send(setup, 'stream-warm', 0, [('pipe', 'flow'), ('pipe', 'disparity')])
    tags = [f'stream-{k}' for k in range(40)]
    sender = threading.Thread(target=lambda: [
        (publish_each(pubs, frame_msgs(tag, k % 6)), time.sleep(0.05))
        for k, tag in enumerate(tags)])
    sender.start()
    switches = 0
    while sender.is_alive():
        for change in ({'surf.enabled': False}, {'surf.enabled': True},
                       {'flow.enabled': False, 'disparity.enabled': False},
                       {'flow.enabled': True, 'disparity.enabled': True}):
            assert all(r.successful for r in ros.set_parameters(PIPELINE, change))
            switches += 1
            time.sleep(0.1)
    sender.join()
    ros.set_parameters(PIPELINE, {'surf.enabled': True, 'flow.enabled': True,
                                  'disparity.enabled': True})
    send(setup, 'stream-end', 1, [('sep', 'disparity'), ('sep', 'keypoints'), ('sep', 'flow')])
    answers = {key: {m.header.frame_id: m for m in out[key].messages}
               for key in EVERY + [('pipe', 'flow/span'), ('sep', 'flow/span')]}
    compared = {'disparity': 0, 'keypoints': 0, 'flow': 0}
    for tag in tags:
        if tag in answers[('pipe', 'disparity')] and tag in answers[('sep', 'disparity')]:
            pipe, sep = (image_to_numpy(answers[(ns, 'disparity')][tag].image)
                         for ns in ('pipe', 'sep'))
            assert pipe.tobytes() == sep.tobytes(), tag
            compared['disparity'] += 1
        if tag in answers[('pipe', 'keypoints')] and tag in answers[('sep', 'keypoints')]:
            pipe, sep = (cloud_to_array(answers[(ns, 'keypoints')][tag]) for ns in ('pipe', 'sep'))
            assert pipe.tobytes() == sep.tobytes(), tag
            compared['keypoints'] += 1
        spans = [answers[(ns, 'flow/span')].get(tag) for ns in ('pipe', 'sep')]
        if None not in spans and spans[0].time_ref == spans[1].time_ref:
            pipe, sep = (image_to_numpy(answers[(ns, 'flow')][tag]) for ns in ('pipe', 'sep'))
            np.testing.assert_allclose(pipe, sep, atol=1e-4, equal_nan=True, err_msg=tag)
            compared['flow'] += 1
    assert switches >= 4 and all(count >= 3 for count in compared.values()), compared
