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
convert_node over real Fast DDS.

Every encoding through the OpenCL round trip, parameters through the real set_parameters service,
malformed messages, diagnostics and Ctrl-C.
"""
from __future__ import annotations

import array

from cl_vision_nodes.imaging.encodings import (encoding_info, ENCODINGS, gray_to_mono8_reference,
                                               raw_to_array, RawImage, to_gray_reference)
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest
from rosutil import NodeProcess, publish_until_answered
from sensor_msgs.msg import Image

pytestmark = pytest.mark.ros

NODE = 'convert_node'
HEIGHT, WIDTH, PAD = 9, 13, 7  # odd sizes, rows padded by 7 bytes of garbage
MULTI_BYTE = ('mono16', '32FC1', '32FC2')


def sample_array(encoding: str, rng: np.random.Generator) -> np.ndarray:
    info = encoding_info(encoding)
    shape = (HEIGHT, WIDTH) if info.channels == 1 else (HEIGHT, WIDTH, info.channels)
    if info.dtype == np.float32:
        return (rng.random(shape, dtype=np.float32) * 300 - 20).astype(np.float32)
    return rng.integers(0, np.iinfo(info.dtype).max + 1, shape, dtype=info.dtype)


def padded_msg(pixels: np.ndarray, encoding: str, tag: str, big_endian: bool = False) -> Image:
    """Return an Image whose rows carry PAD garbage bytes after the pixels."""
    info = encoding_info(encoding)
    wire = pixels.astype(info.dtype.newbyteorder('>' if big_endian else '<'))
    rows = wire.reshape(HEIGHT, -1).view(np.uint8)
    padded = np.full((HEIGHT, rows.shape[1] + PAD), 0xA5, np.uint8)
    padded[:, :rows.shape[1]] = rows
    msg = Image(height=HEIGHT, width=WIDTH, encoding=encoding, is_bigendian=int(big_endian),
                step=padded.shape[1])
    msg.header.frame_id = tag
    msg.data = array.array('B', padded.tobytes())
    return msg


def as_raw(msg: Image) -> RawImage:
    return RawImage(msg.encoding, msg.height, msg.width, msg.step, bool(msg.is_bigendian),
                    np.frombuffer(msg.data, np.uint8))


@pytest.fixture(scope='module')
def node(ros):
    proc = NodeProcess('cl_vision_nodes.ros.convert_node',
                       ['-p', 'output_encoding:=passthrough', '-p', 'diagnostics_period:=0.5',
                        '-r', 'image:=/convert_test/in', '-r', 'image_out:=/convert_test/out'])
    pub = ros.publisher(Image, '/convert_test/in')
    out = ros.collect(Image, '/convert_test/out')
    assert ros.wait_until(lambda: pub.get_subscription_count() > 0), proc.output()
    yield proc, pub, out
    code = proc.stop()
    assert code == 0, proc.output()
    assert 'Traceback' not in proc.output()


def round_trip(ros, node, msg: Image) -> Image:
    """Publish until the node answers with this frame's tag (best effort may drop a frame)."""
    proc, pub, out = node
    return publish_until_answered(lambda: pub.publish(msg), out, msg.header.frame_id, tries=5,
                                  log=lambda: f'node alive={proc.alive()}:\n{proc.output()}')


def test_passthrough_every_encoding_padded_and_big_endian(ros, node):
    rng = np.random.default_rng(1)
    for encoding in ENCODINGS:
        for big in ((False, True) if encoding in MULTI_BYTE else (False,)):
            pixels = sample_array(encoding, rng)
            msg = padded_msg(pixels, encoding, f'pass-{encoding}-{big}', big)
            got = round_trip(ros, node, msg)
            assert (got.encoding, got.height, got.width, got.is_bigendian) == \
                (encoding, HEIGHT, WIDTH, 0)
            back = raw_to_array(as_raw(got))
            np.testing.assert_array_equal(back, pixels, err_msg=encoding)


def test_declared_parameters_are_the_schema(ros, node):
    from cl_vision_nodes.imaging.schema import CONVERT_SCHEMA
    from cl_vision_nodes.ros.parameters import descriptor
    declared = ros.describe_parameters(NODE)
    ours = {n: d for n, d in declared.items()
            if not n.startswith('qos_overrides.')
            and n not in ('use_sim_time', 'start_type_description_service')}
    assert set(ours) == set(CONVERT_SCHEMA.specs)
    for name, got in ours.items():
        want = descriptor(CONVERT_SCHEMA.specs[name])
        assert (got.type, got.read_only, got.description) == \
            (want.type, want.read_only, want.description), name
        assert list(got.floating_point_range) == list(want.floating_point_range), name
        assert list(got.integer_range) == list(want.integer_range), name
    assert any(n.startswith('qos_overrides./convert_test/in.subscription') for n in declared)


def test_gray_outputs_match_reference_and_gain_applies_next_frame(ros, node):
    rng = np.random.default_rng(2)
    intensity = [e for e, info in ENCODINGS.items() if info.kind != 'field']
    for output, gain in (('mono8', 1.0), ('32FC1', 1.0), ('mono8', 1.7)):
        with ros.changed_parameters(NODE, output_encoding=output, gain=gain) as results:
            assert all(r.successful for r in results), results
            for encoding in intensity:
                msg = padded_msg(sample_array(encoding, rng), encoding,
                                 f'{output}-{gain}-{encoding}')
                got = round_trip(ros, node, msg)
                gray = to_gray_reference(as_raw(msg))
                back = raw_to_array(as_raw(got))
                if output == 'mono8':
                    assert got.encoding == 'mono8'
                    np.testing.assert_array_equal(back, gray_to_mono8_reference(gray, gain),
                                                  encoding)
                else:
                    assert got.encoding == '32FC1'
                    np.testing.assert_array_equal(back, gray * np.float32(gain), encoding)


@pytest.mark.parametrize('change, reason', [
    ({'gain': 1000.0}, 'gain: 1000.0 is above the maximum 255.0'),
    ({'gain': 'bright'}, "gain: expected float, got str 'bright'"),  # not rclpy's type numbers
    ({'gain': float('nan')}, 'gain: nan is not a finite number'),
    ({'output_encoding': 'rgb8'}, 'output_encoding'),  # not a choice
    ({'device': 'cpu'}, 'read-only'),                # needs a restart
    ({'output_queue_size': 3}, 'read-only'),
])
def test_invalid_parameters_are_refused_with_a_reason(ros, node, change, reason):
    with ros.changed_parameters(NODE, **change) as results:
        assert len(results) == 1 and not results[0].successful
        assert reason in results[0].reason, results[0].reason
    proc, _, _ = node
    assert proc.alive()
    pixels = sample_array('mono8', np.random.default_rng(3))
    got = round_trip(ros, node, padded_msg(pixels, 'mono8', f'after-{reason}-{change}'))
    np.testing.assert_array_equal(raw_to_array(as_raw(got)), pixels)


def test_an_int_for_a_float_parameter_is_taken_as_float(ros, node):
    """`ros2 param set /convert_node gain 2` sends an integer, as the CLI and YAML may."""
    with ros.changed_parameters(NODE, gain=2) as results:
        assert results[0].successful, results[0].reason
        got = ros.get_parameters(NODE, ['gain'])['gain']
    assert got == 2.0 and type(got) is float


def malformed_messages() -> dict[str, Image]:
    good = padded_msg(np.zeros((HEIGHT, WIDTH), np.uint8), 'mono8', 'bad')
    short = padded_msg(np.zeros((HEIGHT, WIDTH), np.uint8), 'mono8', 'bad')
    short.data = short.data[:-1]
    narrow = Image(height=HEIGHT, width=WIDTH, encoding='rgb8', step=WIDTH * 2,
                   data=good.data)
    unknown = Image(height=HEIGHT, width=WIDTH, encoding='hsv8', step=good.step, data=good.data)
    zero_w = Image(height=HEIGHT, width=0, encoding='mono8', step=0)
    zero_h = Image(height=0, width=WIDTH, encoding='mono8', step=WIDTH)
    return {'data shorter than step*height': short, 'step below width*bpp': narrow,
            'unknown encoding': unknown, 'zero width': zero_w, 'zero height': zero_h}


def rejected_so_far(diag) -> int:
    """Bad-input frames the node has reported on /diagnostics (windows add up)."""
    return sum(int(kv.value) for m in list(diag.messages) for status in m.status
               if NODE in status.name for kv in status.values if kv.key == 'rejected_bad_input')


def test_malformed_messages_are_logged_and_next_frame_served(ros, node):
    proc, pub, _ = node
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    pixels = sample_array('mono8', np.random.default_rng(4))
    for case, bad in malformed_messages().items():
        before = rejected_so_far(diag)
        # Keep-last-1 best effort may overwrite a frame before the node takes it: resend until
        # the node has counted it.
        for _ in range(20):
            pub.publish(bad)
            if diag.wait_for(lambda _: rejected_so_far(diag) > before, timeout=1.0):
                break
        assert rejected_so_far(diag) > before, f'{case}: never rejected\n{proc.output()}'
        got = round_trip(ros, node, padded_msg(pixels, 'mono8', f'good-after-{case}'))
        np.testing.assert_array_equal(raw_to_array(as_raw(got)), pixels)
        assert proc.alive(), case
    log = proc.output()
    assert 'frame skipped' in log and 'data has' in log, log  # the first case, then throttled


def test_diagnostics_report_frames(ros, node):
    diag = ros.collect(DiagnosticArray, '/diagnostics')
    proc, pub, _ = node
    pixels = sample_array('mono8', np.random.default_rng(5))
    for i in range(3):
        round_trip(ros, node, padded_msg(pixels, 'mono8', f'diag-{i}'))

    def ours(msgs):
        for m in msgs:
            for status in m.status:
                values = {kv.key: kv.value for kv in status.values}
                if NODE in status.name and int(values.get('frames', 0)) > 0:
                    return values
        return None
    values = diag.wait_for(ours, timeout=10.0)
    assert values is not None, proc.output()
    assert float(values['fps']) > 0 and float(values['latency_mean_ms']) > 0


def test_profile_reports_device_stage_times(ros):
    proc = NodeProcess('cl_vision_nodes.ros.convert_node',
                       ['-r', '__node:=convert_profiled', '-p', 'profile:=true',
                        '-p', 'diagnostics_period:=0.5', '-r', 'image:=/profiled/in',
                        '-r', 'image_out:=/profiled/out',
                        '--log-level', 'convert_profiled:=debug'])
    try:
        diag = ros.collect(DiagnosticArray, '/diagnostics')
        pub = ros.publisher(Image, '/profiled/in')
        assert ros.wait_until(lambda: pub.get_subscription_count() > 0), proc.output()

        def stages(msgs):
            for m in msgs:
                for status in m.status:
                    keys = {kv.key for kv in status.values}
                    if 'convert_profiled' in status.name and 'device_decode_ms' in keys:
                        return keys
            return None
        msg = padded_msg(sample_array('bgr8', np.random.default_rng(6)), 'bgr8', 'profiled')
        keys = None
        for _ in range(20):
            pub.publish(msg)
            keys = diag.wait_for(stages, timeout=1.0)
            if keys:
                break
        assert keys and {'device_upload_ms', 'device_scale_ms', 'device_download_ms'} <= keys, \
            proc.output()
        # the short INFO line leaves the device split to the DEBUG line beside it
        assert 'device ms: upload' in proc.output()
    finally:
        assert proc.stop() == 0
