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
    """An OpenCL program failed to compile; the message carries the .cl file and compiler log."""
