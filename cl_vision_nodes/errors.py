"""Named errors of cl_vision_nodes.

Nodes catch ``CLVisionError`` subclasses per frame (log, keep serving); the CLI turns them into
one line on stderr and exit code 2. Anything else is a bug and is allowed to surface.
"""


class CLVisionError(Exception):
    """Base class of every error this package raises on purpose."""


class ImageFormatError(CLVisionError):
    """An image (message or array) cannot be interpreted: unknown encoding, bad size or step."""


class DataFormatError(CLVisionError):
    """A data file (.flo, .pfm, KITTI PNG, homography, ...) is missing, unreadable or malformed."""


class ParameterError(CLVisionError):
    """A parameter name is unknown or its value is out of range or of the wrong type."""


class DeviceError(CLVisionError):
    """No usable OpenCL platform or device matches the request."""


class KernelBuildError(CLVisionError):
    """An OpenCL program failed to compile: the message names the device, the .cl files, the
    compiler's first error and the fix; ``log`` holds the compiler's whole output."""

    def __init__(self, message: str, log: str = ''):
        super().__init__(message)
        self.log = log
