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
Named errors of cl_vision_nodes.

Nodes catch ``CLVisionError`` subclasses per frame (log, keep serving); the CLI turns them into
one line on stderr and exit code 2. Anything else is a bug and is allowed to surface.
"""


class CLVisionError(Exception):
    """Base class of every error this package raises on purpose."""


class ImageFormatError(CLVisionError):
    """An image (message or array) cannot be interpreted: unknown encoding, bad size or step."""


class PartnerPending(CLVisionError):
    """
    A frame came before a message it needs (a camera_info, a moment after a driver's first image).

    A node counts the frame as without a partner and logs it at debug level: not bad input.
    """


class DataFormatError(CLVisionError):
    """A data file (.flo, .pfm, KITTI PNG, homography, ...) is missing, unreadable or malformed."""


class ParameterError(CLVisionError):
    """A parameter name is unknown or its value is out of range or of the wrong type."""


class DeviceError(CLVisionError):
    """No usable OpenCL platform or device matches the request."""


class KernelBuildError(CLVisionError):
    """
    An OpenCL program failed to compile.

    The message names the device, the .cl files, the compiler's first error and the fix; ``log``
    holds the compiler's whole output.
    """

    def __init__(self, message: str, log: str = ''):
        super().__init__(message)
        self.log = log


class NodeNotFoundError(CLVisionError):
    """A running ROS node that a command talks to does not answer (not running, other domain)."""
