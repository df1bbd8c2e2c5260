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
Data sets with ground truth written as rosbag2 files in the layout of ``bags.layout``.

DATASET is a folder whose layout is recognised from its files, or a generated sequence:

- KITTI 2015: ``image_2``/``image_3`` frames ``<scene>_10`` and ``_11``, as folders
  (``image_2/000001_10.png``) or flat (``image_2_000001_10.png``); disparity from ``disp_noc_0``
  (else ``disp_occ_0``) and flow from ``flow_noc`` (else ``flow_occ``) where present.
- Stereo pairs (Middlebury Cones, the libelas images): ``<name>_left.png`` + ``<name>_right.png``,
  optional ``<name>_gt.png`` (disparity times ``--disparity-scale``, 0 = unknown) and
  ``<name>_mask.png`` (white = scored); one frame per pair.
- Flow sequence (Middlebury, Yosemite): frames ``<prefix><number>.png`` in numeric order;
  ``flow<N>.flo`` is the flow from frame N to the next; a single ``.flo`` beside exactly two
  frames is the flow between them.
- Oxford affine sequence: ``img1..imgN`` (.png/.ppm/.pgm) and ``H1to<N>p`` homographies.
- ``synthetic:flow:FRAMES:HxW``: ``dataio.synthetic.flow_sequence`` under its default
  translation, mono, with flow and homography ground truth.
- ``synthetic:stereo:FRAMES:HxW``: a stereo rig panning right by 2 px per frame over a
  ``dataio.synthetic.stereo_pair`` scene (windows of one wide pair, so every frame has exact
  disparity, flow (-2, 0) and homography ground truth).
- ``motorcycle`` or ``motorcycle:FRAMES:HxW`` (default 12 frames of 240x320): scikit-image's
  Middlebury 2014 Motorcycle pair rendered into a drive through the scene, forward and turning
  right (``dataio.motorcycle``): real images with exact disparity and flow ground truth from the
  scene's depth, and the rig's focal length and baseline in camera_info. No homography: a 3-D
  scene seen from a moving camera has none (SURF repeatability takes the flow as correspondence:
  ``evaluation.quality.flow_repeatability``). A folder called ``motorcycle`` is ``./motorcycle``.
Both synthetic kinds are deterministic for a given ``--seed``; the motorcycle drive has no seed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import re
import shutil
from typing import Callable, Iterable, Iterator

from cl_vision_nodes.bags import layout
from cl_vision_nodes.bags.layout import KITTI_CAMERA, StereoCamera
from cl_vision_nodes.bags.storage import open_writer, typestore
from cl_vision_nodes.dataio.formats import (read_flo, read_homography, read_image,
                                            read_kitti_disparity, read_kitti_flow,
                                            read_scaled_disparity_png)
from cl_vision_nodes.dataio.motorcycle import sequence
from cl_vision_nodes.dataio.synthetic import flow_sequence, Motion, stereo_pair, translation
from cl_vision_nodes.errors import DataFormatError
from cl_vision_nodes.imaging.encodings import array_to_raw
import numpy as np

SYNTHETIC_PREFIX = 'synthetic:'
SYNTHETIC_STEREO_PAN_PX = 2
SYNTHETIC_MAX_DISPARITY = 16.0
SYNTHETIC_MAX_PIXELS = 10**8  # frames x height x width: a sequence is generated in memory (~1 GB)
MOTORCYCLE = 'motorcycle'
MOTORCYCLE_FRAMES = 12
MOTORCYCLE_SIZE = (240, 320)


@dataclass(frozen=True)
class Frame:
    """One time step of a data set; ground truth None where the data set has none."""

    left: np.ndarray  # HxW uint8
    right: np.ndarray | None = None
    disparity: np.ndarray | None = None  # HxW float32 px, NaN = unknown
    flow: np.ndarray | None = None  # HxWx2 float32, previous frame -> this one, NaN = unknown
    homography: np.ndarray | None = None  # 3x3, first frame -> this one


@dataclass(frozen=True)
class Dataset:
    """A recognised data set: frames are loaded lazily, one at a time, while the bag is written."""

    layout: str
    camera: StereoCamera
    frames: Iterable[Frame]


# --- layouts -----------------------------------------------------------------------------------


def _kitti_file(root: Path, folder: str, scene: str, frame: str) -> Path | None:
    """Find a KITTI file in either the official (``folder/scene_frame.png``) or flat naming."""
    for path in (root / folder / f'{scene}_{frame}.png', root / f'{folder}_{scene}_{frame}.png'):
        if path.is_file():
            return path
    return None


def _first_kitti_file(root: Path, folders: tuple[str, ...], scene: str) -> Path | None:
    """Find the ground truth of a scene's frame 10 in the first folder that has it (noc first)."""
    return next((p for f in folders if (p := _kitti_file(root, f, scene, '10')) is not None), None)


def kitti(root: Path) -> Dataset | None:
    pattern = re.compile(r'(?:image_2/|image_2_)(\d+)_(\d+)\.png')
    found = sorted({m.groups() for p in root.rglob('*.png')
                    if (m := pattern.fullmatch(p.relative_to(root).as_posix()))})
    if not found:
        return None

    def frames() -> Iterator[Frame]:
        for scene, index in found:
            right = _kitti_file(root, 'image_3', scene, index)
            if right is None:
                raise DataFormatError(f'{root}: KITTI scene {scene}_{index} has no image_3 file')
            disparity = flow = None
            if index == '10' and (path := _first_kitti_file(root, ('disp_noc_0', 'disp_occ_0'),
                                                            scene)):
                disparity = read_kitti_disparity(path)
            if index == '11' and (path := _first_kitti_file(root, ('flow_noc', 'flow_occ'),
                                                            scene)):
                flow = read_kitti_flow(path)
            yield Frame(read_image(_kitti_file(root, 'image_2', scene, index)), read_image(right),
                        disparity, flow)
    return Dataset('KITTI 2015', KITTI_CAMERA, frames())


def stereo_pairs(root: Path, disparity_scale: float) -> Dataset | None:
    names = sorted(p.name[:-len('_left.png')] for p in root.glob('*_left.png')
                   if (root / p.name.replace('_left.png', '_right.png')).is_file())
    if not names:
        return None

    def frames() -> Iterator[Frame]:
        for name in names:
            disparity = None
            if (root / f'{name}_gt.png').is_file():
                disparity = read_scaled_disparity_png(root / f'{name}_gt.png', disparity_scale)
                if (root / f'{name}_mask.png').is_file():
                    disparity[read_image(root / f'{name}_mask.png') <= 127] = np.nan
            yield Frame(read_image(root / f'{name}_left.png'),
                        read_image(root / f'{name}_right.png'), disparity)
    return Dataset('stereo pairs', StereoCamera(), frames())


def oxford(root: Path) -> Dataset | None:
    images = {int(m.group(1)): p for p in root.iterdir()
              if (m := re.fullmatch(r'img(\d+)\.(?:png|ppm|pgm)', p.name))}
    if not any(root.glob('H1to*p')) or 1 not in images:
        return None

    def frames() -> Iterator[Frame]:
        for number in sorted(images):
            path = root / f'H1to{number}p'
            homography = np.eye(3) if number == 1 else \
                read_homography(path) if path.is_file() else None
            yield Frame(read_image(images[number]), homography=homography)
    return Dataset('Oxford affine sequence', StereoCamera(), frames())


def flow_sequence_folder(root: Path) -> Dataset | None:
    flos = sorted(root.glob('*.flo'))
    numbered = [(int(m.group(2)), p) for p in root.glob('*.png')
                if (m := re.fullmatch(r'([A-Za-z_]*?)(\d+)\.png', p.name))]
    if not flos or len(numbered) < 2:
        return None
    numbers = [n for n, _ in sorted(numbered)]
    truth: dict[int, Path] = {}  # frame number -> flow from the previous frame to it
    for flo in flos:
        match = re.fullmatch(r'flow(\d+)\.flo', flo.name)
        if match and int(match.group(1)) in numbers[:-1]:
            truth[numbers[numbers.index(int(match.group(1))) + 1]] = flo
        elif len(flos) == 1 and len(numbers) == 2:
            truth[numbers[1]] = flo
        else:
            raise DataFormatError(f'{flo}: cannot tell which frames it belongs to (expected '
                                  'flow<N>.flo for frame N, or one .flo beside two frames)')

    def frames() -> Iterator[Frame]:
        for number, path in sorted(numbered):
            flow = read_flo(truth[number]) if number in truth else None
            yield Frame(read_image(path), flow=flow)
    return Dataset('flow sequence', StereoCamera(), frames())


def synthetic_flow(n_frames: int, height: int, width: int, seed: int) -> Dataset:
    """flow_sequence under its default translation; the homography is that shift times k."""
    motion = Motion('translation')
    sequence = flow_sequence(n_frames, height, width, motion=motion, seed=seed)

    def frames() -> Iterator[Frame]:
        for k, image in enumerate(sequence.frames):
            flow = None
            if k:
                flow = np.where(sequence.valid[k - 1][..., None], sequence.flows[k - 1], np.nan)
            homography = translation(k * motion.shift[0], k * motion.shift[1])
            yield Frame(image, flow=flow.astype(np.float32) if flow is not None else None,
                        homography=homography)
    return Dataset('synthetic flow', StereoCamera(), frames())


def synthetic_stereo(n_frames: int, height: int, width: int, seed: int) -> Dataset:
    """
    Windows of one wide stereo_pair, moved right by SYNTHETIC_STEREO_PAN_PX per frame.

    Both views are cut at the same columns, so x_R = x_L - d holds in every window; the scene
    moves by an integer step, so the images and the flow (-step, 0) are exact.
    """
    step = SYNTHETIC_STEREO_PAN_PX
    pair = stereo_pair(height, width + step * (n_frames - 1), seed=seed,
                       max_disparity=SYNTHETIC_MAX_DISPARITY)
    columns = np.arange(width)

    def frames() -> Iterator[Frame]:
        for k in range(n_frames):
            window = slice(k * step, k * step + width)
            disparity = pair.disparity[:, window]
            seen = pair.valid[:, window] & (columns[None, :] - disparity >= 0)
            flow = None
            if k:
                flow = np.zeros((height, width, 2), np.float32)
                flow[..., 0] = -step
                flow[:, :step] = np.nan  # these pixels of the previous frame left the view
            yield Frame(pair.left[:, window], pair.right[:, window],
                        np.where(seen, disparity, np.nan).astype(np.float32), flow,
                        translation(-k * step, 0.0))
    return Dataset('synthetic stereo', StereoCamera(), frames())


SYNTHETIC = {'flow': synthetic_flow, 'stereo': synthetic_stereo}


def parse_synthetic(spec: str, seed: int) -> Dataset:
    match = re.fullmatch(r'synthetic:(\w+):(\d+):(\d+)x(\d+)', spec)
    if not match or match.group(1) not in SYNTHETIC:
        raise DataFormatError(f'{spec!r}: expected synthetic:{{{",".join(SYNTHETIC)}}}'
                              ':FRAMES:HxW, e.g. synthetic:stereo:10:240x320')
    kind, frames, height, width = match.group(1), *(int(g) for g in match.groups()[1:])
    if frames < 2 or height < 16 or width < 16:
        raise DataFormatError(f'{spec!r}: needs at least 2 frames of 16x16 pixels')
    if frames * height * width > SYNTHETIC_MAX_PIXELS:
        raise DataFormatError(f'{spec!r}: {frames} x {height} x {width} pixels is more than the '
                              f'{SYNTHETIC_MAX_PIXELS:.0e} a generated sequence may hold')
    return SYNTHETIC[kind](frames, height, width, seed)


def motorcycle(n_frames: int = MOTORCYCLE_FRAMES, height: int = MOTORCYCLE_SIZE[0],
               width: int = MOTORCYCLE_SIZE[1]) -> Dataset:
    """dataio.motorcycle's drive: stereo frames with disparity and flow truth, no homography."""
    drive = sequence(n_frames, height, width)
    frames = (Frame(f.left, f.right, f.disparity, f.flow) for f in drive.frames)
    return Dataset('Middlebury Motorcycle drive', StereoCamera(drive.focal_px, drive.baseline_m),
                   frames)


def parse_motorcycle(spec: str) -> Dataset:
    match = re.fullmatch(rf'{MOTORCYCLE}(?::(\d+):(\d+)x(\d+))?', spec)
    if not match:
        raise DataFormatError(f'{spec!r}: expected {MOTORCYCLE} or {MOTORCYCLE}:FRAMES:HxW, e.g. '
                              f'{MOTORCYCLE}:12:240x320')
    if match.group(1) is None:
        return motorcycle()
    return motorcycle(*(int(g) for g in match.groups()))


def open_dataset(source: str, disparity_scale: float = 1.0, seed: int = 0) -> Dataset:
    """
    Open the data set named by ``source`` (a folder, a synthetic spec or the motorcycle drive).

    A folder's kind is told by its files' layout.
    """
    if source.startswith(SYNTHETIC_PREFIX):
        return parse_synthetic(source, seed)
    if source == MOTORCYCLE or source.startswith(f'{MOTORCYCLE}:'):
        return parse_motorcycle(source)
    root = Path(source)
    if not root.is_dir():
        raise DataFormatError(f'{root}: no such folder')
    detectors: list[Callable[[Path], Dataset | None]] = [
        kitti, lambda r: stereo_pairs(r, disparity_scale), oxford, flow_sequence_folder]
    for detect in detectors:
        dataset = detect(root)
        if dataset is not None:
            return dataset
    raise DataFormatError(f'{root}: unknown data set layout (expected KITTI image_2/image_3, '
                          '<name>_left/_right.png pairs, Oxford img<N> + H1to<N>p, or numbered '
                          'frames with .flo ground truth)')


# --- messages ----------------------------------------------------------------------------------


class MessageFactory:
    """Typestore messages of the bag layout for one stamp."""

    def __init__(self, typestore, camera: StereoCamera):
        self.types, self.camera = typestore.types, camera

    def header(self, stamp_ns: int, frame_id: str):
        sec, nanosec = divmod(stamp_ns, 10**9)
        time = self.types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec)
        return self.types['std_msgs/msg/Header'](stamp=time, frame_id=frame_id)

    def image(self, array: np.ndarray, encoding: str, stamp_ns: int, frame_id: str):
        raw = array_to_raw(array, encoding)  # the package's encoder: the nodes' own conventions
        return self.types[layout.IMAGE_TYPE](
            header=self.header(stamp_ns, frame_id), height=raw.height, width=raw.width,
            encoding=raw.encoding, is_bigendian=int(raw.is_bigendian), step=raw.step,
            data=np.frombuffer(raw.data, np.uint8))

    def camera_info(self, width: int, height: int, stamp_ns: int, right: bool):
        p = self.camera.projection(width, height, right)
        roi = self.types['sensor_msgs/msg/RegionOfInterest'](
            x_offset=0, y_offset=0, height=0, width=0, do_rectify=False)
        return self.types[layout.CAMERA_INFO_TYPE](
            header=self.header(stamp_ns, layout.RIGHT_FRAME if right else layout.LEFT_FRAME),
            height=height, width=width, distortion_model='plumb_bob', d=np.zeros(5),
            k=np.array([p[0], p[1], p[2], p[4], p[5], p[6], p[8], p[9], p[10]]),
            r=np.eye(3).ravel(), p=np.array(p), binning_x=0, binning_y=0, roi=roi)

    def homography(self, matrix: np.ndarray):
        dims = [self.types['std_msgs/msg/MultiArrayDimension'](label=label, size=3, stride=stride)
                for label, stride in (('rows', 9), ('cols', 3))]
        layout_msg = self.types['std_msgs/msg/MultiArrayLayout'](dim=dims, data_offset=0)
        return self.types[layout.HOMOGRAPHY_TYPE](layout=layout_msg,
                                                  data=np.asarray(matrix, np.float64).ravel())

    def frame_messages(self, frame: Frame, stamp_ns: int) -> Iterator[tuple[str, object]]:
        height, width = frame.left.shape
        yield layout.LEFT_INFO, self.camera_info(width, height, stamp_ns, right=False)
        yield layout.LEFT_IMAGE, self.image(frame.left, layout.IMAGE_ENCODING, stamp_ns,
                                            layout.LEFT_FRAME)
        if frame.right is not None:
            yield layout.RIGHT_INFO, self.camera_info(width, height, stamp_ns, right=True)
            yield layout.RIGHT_IMAGE, self.image(frame.right, layout.IMAGE_ENCODING, stamp_ns,
                                                 layout.RIGHT_FRAME)
        if frame.disparity is not None:
            yield layout.GT_DISPARITY, self.image(frame.disparity.astype(np.float32), '32FC1',
                                                  stamp_ns, layout.LEFT_FRAME)
        if frame.flow is not None:
            yield layout.GT_FLOW, self.image(frame.flow.astype(np.float32), '32FC2', stamp_ns,
                                             layout.LEFT_FRAME)
        if frame.homography is not None:
            yield layout.GT_HOMOGRAPHY, self.homography(frame.homography)


def _check_sizes(frame: Frame, index: int) -> None:
    """View and ground truth of a frame must share the left image's size."""
    for name in ('right', 'disparity', 'flow'):
        array = getattr(frame, name)
        if array is not None and array.shape[:2] != frame.left.shape:
            raise DataFormatError(f'frame {index}: {name} is {array.shape[1]}x{array.shape[0]}, '
                                  f'the left image {frame.left.shape[1]}x{frame.left.shape[0]}')


def write_bag(dataset: Dataset, out: Path, storage: str, rate: float) -> dict[str, int]:
    """
    Write every frame at stamps START_NS + k / rate; messages per topic.

    A failure removes the half-written bag so that the next attempt does not find it in the way.
    """
    if out.exists():
        raise DataFormatError(f'{out} exists already, not overwriting')
    store = typestore()
    factory = MessageFactory(store, dataset.camera)
    counts: dict[str, int] = {}
    try:
        with open_writer(out, storage) as writer:
            for index, frame in enumerate(dataset.frames):
                _check_sizes(frame, index)
                stamp = layout.START_NS + round(index * 1e9 / rate)
                for topic, msg in factory.frame_messages(frame, stamp):
                    msgtype = layout.INPUT_TYPES[topic]
                    writer.add_topic(topic, msgtype)
                    writer.write(topic, stamp, store.serialize_cdr(msg, msgtype))
                    counts[topic] = counts.get(topic, 0) + 1
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return counts
