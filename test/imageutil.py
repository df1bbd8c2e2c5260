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


"""Random raw images in any encoding, with padded rows, for the tests of device decoders."""
from cl_vision_nodes.imaging.encodings import array_to_raw, encoding_info, RawImage
import numpy as np


def padded(raw: RawImage, pad: int, rng: np.random.Generator) -> RawImage:
    """``raw`` with ``pad`` random bytes after every row."""
    rows = np.frombuffer(raw.data, np.uint8).reshape(raw.height, raw.step)
    out = rng.integers(0, 256, (raw.height, raw.step + pad), dtype=np.uint8)
    out[:, :raw.step] = rows
    return RawImage(raw.encoding, raw.height, raw.width, raw.step + pad, raw.is_bigendian,
                    out.reshape(-1))


def random_image(encoding: str, height: int, width: int, rng: np.random.Generator,
                 big_endian: bool = False, pad: int = 0) -> RawImage:
    """Random pixels over the encoding's whole range (floats around 100, well outside 0..255)."""
    info = encoding_info(encoding)
    shape = (height, width) if info.channels == 1 else (height, width, info.channels)
    if info.dtype == np.float32:
        pixels = (rng.standard_normal(shape) * 80 + 100).astype(np.float32)
    else:
        pixels = rng.integers(0, np.iinfo(info.dtype).max + 1, shape, dtype=info.dtype)
    return padded(array_to_raw(pixels, encoding, big_endian), pad, rng)
