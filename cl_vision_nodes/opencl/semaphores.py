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
Binary semaphores of ``cl_khr_semaphore``, for a GPU queue's gate.

NVIDIA's OpenCL keeps a host thread busy for about 100 ms after any user event completes, so a
gate held on a user event once a frame costs a core at every camera rate; a wait on a semaphore
that a second queue signals does not (an H100: 0.05 cores at 30 Hz against 1.04). pyopencl wraps
neither the extension nor its entry points, so they are called through ctypes with pyopencl's
handles (``int_ptr``), from the ICD loader pyopencl itself loaded.
"""
from __future__ import annotations

import ctypes
import functools
from typing import NamedTuple
import weakref

from cl_vision_nodes.errors import DeviceError
import pyopencl as cl

EXTENSION = 'cl_khr_semaphore'
_SEMAPHORE_TYPE = 0x203D  # CL_SEMAPHORE_TYPE_KHR
_BINARY = 1  # CL_SEMAPHORE_TYPE_BINARY_KHR
_handle = ctypes.c_void_p
_enqueue = ctypes.CFUNCTYPE(ctypes.c_int32, _handle, ctypes.c_uint32, ctypes.POINTER(_handle),
                            _handle, ctypes.c_uint32, _handle, _handle)


class SemaphoresUnavailable(DeviceError):
    """The device, or the ICD loader in this process, offers no ``cl_khr_semaphore``."""


class _EntryPoints(NamedTuple):
    create: ctypes._CFuncPtr
    wait: ctypes._CFuncPtr
    signal: ctypes._CFuncPtr
    release: ctypes._CFuncPtr


def _loader() -> ctypes.CDLL:
    """Return the OpenCL ICD loader this process already has (pyopencl's), else the system's."""
    with open('/proc/self/maps') as maps:
        paths = [line.split()[-1] for line in maps if 'libOpenCL' in line]
    try:
        return ctypes.CDLL(paths[0] if paths else 'libOpenCL.so.1')
    except OSError as error:
        raise SemaphoresUnavailable(f'no OpenCL ICD loader to call {EXTENSION}: {error}') from None


@functools.cache
def _lookup() -> ctypes._CFuncPtr:
    lookup = _loader().clGetExtensionFunctionAddressForPlatform
    lookup.restype, lookup.argtypes = _handle, [_handle, ctypes.c_char_p]
    return lookup


def extension_function(platform: cl.Platform, name: str) -> int:
    """Return the address of the platform's extension function ``name``, or 0 if it has none."""
    return int(_lookup()(platform.int_ptr, name.encode()) or 0)


@functools.cache
def _entry_points(platform: cl.Platform) -> _EntryPoints:
    """Look up the platform's semaphore functions (once a platform)."""
    def entry(name: str, prototype: type) -> ctypes._CFuncPtr:
        address = extension_function(platform, name)
        if not address:
            raise SemaphoresUnavailable(f'the OpenCL platform has no {name}')
        return prototype(address)
    return _EntryPoints(
        entry('clCreateSemaphoreWithPropertiesKHR', ctypes.CFUNCTYPE(
            _handle, _handle, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int32))),
        entry('clEnqueueWaitSemaphoresKHR', _enqueue),
        entry('clEnqueueSignalSemaphoresKHR', _enqueue),
        entry('clReleaseSemaphoreKHR', ctypes.CFUNCTYPE(ctypes.c_int32, _handle)))


def offers_semaphores(device: cl.Device) -> bool:
    """Return whether ``device`` lists ``cl_khr_semaphore`` among its extensions."""
    return EXTENSION in device.extensions.split()


def _check(code: int, call: str) -> None:
    if code != 0:
        raise DeviceError(f'{call} failed with OpenCL error {code}')


class BinarySemaphore:
    """A binary semaphore of a one-device context: waited on in one queue, signalled in another."""

    def __init__(self, context: cl.Context):
        device = context.devices[0]
        if not offers_semaphores(device):
            raise SemaphoresUnavailable(f'{device.name} offers no {EXTENSION}')
        self._calls = _entry_points(device.platform)
        properties = (ctypes.c_uint64 * 3)(_SEMAPHORE_TYPE, _BINARY, 0)
        error = ctypes.c_int32()
        handle = self._calls.create(context.int_ptr, properties, ctypes.byref(error))
        _check(error.value, 'clCreateSemaphoreWithPropertiesKHR')
        self._handle = _handle(handle)
        # not at exit: a gate still held is signalled then (gate.py), after which it must live
        weakref.finalize(self, self._calls.release, self._handle).atexit = False

    def enqueue_wait(self, queue: cl.CommandQueue) -> None:
        """Hold the commands enqueued after this in ``queue`` until the next signal."""
        code = self._calls.wait(queue.int_ptr, 1, ctypes.byref(self._handle), None, 0, None, None)
        _check(code, 'clEnqueueWaitSemaphoresKHR')

    def enqueue_signal(self, queue: cl.CommandQueue) -> None:
        """Signal the semaphore from ``queue`` (not the waiting one) and flush it."""
        code = self._calls.signal(queue.int_ptr, 1, ctypes.byref(self._handle), None, 0, None,
                                  None)
        _check(code, 'clEnqueueSignalSemaphoresKHR')
        queue.flush()
