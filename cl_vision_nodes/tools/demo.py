"""`cl-vision demo`: a self-contained run of the nodes over real DDS on generated data.

It generates a textured synthetic sequence, publishes it as bgr8 camera frames, runs the
OpenCL nodes in this process (they still talk through Fast DDS, as separate processes would),
prints one status line per second and ends by naming the folder with what it produced.
"""
from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DEMO_SIZE = (240, 320)


@dataclass
class DemoProgress:
    sent: int = 0
    last_sent: float = 0.0
    received: int = 0
    max_error: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        return (f'[{elapsed:5.1f} s] frames sent {self.sent}, converted {self.received}, '
                f'{self.received / max(elapsed, 1e-9):.1f} fps, '
                f'max |gray - truth| {self.max_error:.0f}')


def run(args: argparse.Namespace) -> int:
    # A demo talks to nothing outside this machine unless the user configured ROS otherwise.
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    import cv2
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from sensor_msgs.msg import Image

    from cl_vision_nodes.dataio.synthetic import Motion, flow_sequence
    from cl_vision_nodes.ros.convert_node import ConvertNode
    from cl_vision_nodes.ros.dds_profile import use_large_image_profile
    from cl_vision_nodes.ros.image_conversion import image_to_numpy, numpy_to_image

    out_dir = Path(args.out or f'demo-output/{time.strftime("%Y%m%d-%H%M%S")}')
    out_dir.mkdir(parents=True, exist_ok=True)
    height, width = DEMO_SIZE
    frames = flow_sequence(args.frames, height, width, motion=Motion('rotation'), seed=1).frames
    progress = DemoProgress()

    use_large_image_profile()
    rclpy.init()
    try:
        node = ConvertNode(parameter_overrides=[
            rclpy.parameter.Parameter('device', value=args.device)])
        player = rclpy.create_node('cl_vision_demo_player')
        pub = player.create_publisher(Image, 'image', rclpy.qos.qos_profile_sensor_data)
        outputs: dict[int, np.ndarray] = {}

        def on_output(msg: Image) -> None:
            index = int(msg.header.frame_id)
            gray = image_to_numpy(msg)
            outputs[index] = gray
            progress.received += 1
            error = np.abs(gray.astype(np.int16) - frames[index].astype(np.int16)).max()
            progress.max_error = max(progress.max_error, float(error))
        out_sub = player.create_subscription(Image, 'image_out', on_output, 10)

        def publish_next() -> None:
            ready = pub.get_subscription_count() > 0 and out_sub.get_publisher_count() > 0
            if progress.sent < len(frames) and ready:
                bgr = np.repeat(frames[progress.sent][:, :, None], 3, axis=2)
                msg = numpy_to_image(bgr, 'bgr8')
                msg.header.frame_id = str(progress.sent)
                msg.header.stamp = player.get_clock().now().to_msg()
                pub.publish(msg)
                progress.sent += 1
                progress.last_sent = time.monotonic()
        player.create_timer(1.0 / args.rate, publish_next)
        executor = MultiThreadedExecutor(num_threads=2)
        executor.add_node(node)
        executor.add_node(player)
        next_status = time.monotonic() + 1.0
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline and progress.received < len(frames):
            executor.spin_once(timeout_sec=0.1)
            if progress.sent == len(frames) and time.monotonic() > progress.last_sent + 3.0:
                break  # best effort may drop a frame: do not wait for it forever
            if time.monotonic() >= next_status:
                print(progress.line(), flush=True)
                next_status += 1.0
        print(progress.line())
    finally:
        rclpy.try_shutdown()

    for index in sorted(outputs)[:3]:
        cv2.imwrite(str(out_dir / f'input_{index:03d}.png'), frames[index])
        cv2.imwrite(str(out_dir / f'gray_{index:03d}.png'), outputs[index])
    summary = out_dir / 'summary.txt'
    summary.write_text(progress.line() + '\n')
    print(f'demo outputs: {out_dir.resolve()}')
    return 0 if progress.received and progress.max_error == 0 else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser('demo', help='generate data, run the nodes over DDS, save results')
    demo.add_argument('--frames', type=int, default=30)
    demo.add_argument('--rate', type=float, default=10.0, help='frames per second published')
    demo.add_argument('--timeout', type=float, default=120.0)
    demo.add_argument('--out', help='output folder (default demo-output/<date-time>)')
    demo.add_argument('--device', default='auto')
    demo.set_defaults(run=run)
