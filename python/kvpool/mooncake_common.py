"""Error numbers and helpers shared by the mixins of Mooncake Store's Python API
(mooncake_api.py, mooncake_tensors.py, mooncake_parallel.py)."""

from __future__ import annotations

import ctypes
import functools
import operator
from typing import List, Optional

from kvpool import tensor_format as tf
from kvpool._kvpool import _set_last_error

OK = 0
BUFFER_OVERFLOW = -10
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
UNAVAILABLE_IN_CURRENT_STATUS = -1010
UNAVAILABLE_IN_CURRENT_MODE = -1011
NOT_SUPPORTED = -1012
TASK_NOT_FOUND = -1400

_NO_CUDA = ("CUDA destinations need Mooncake's CUDA IPC path; kvpool moves host memory only "
            "(read with get_tensor_into into host memory, then copy to the device)")


def _fail(code: int, message: str) -> int:
    return _set_last_error(code, message)


def _fail_none(code: int, message: str):
    _set_last_error(code, message)
    return None


class _TensorCall:
    """Turns the tensor layer's exceptions into Mooncake's return values: a code or None, or
    for a batch call (batch=True: the keys are the first argument) one per key."""

    def __init__(self, codes: bool, batch: bool = False):
        self.codes = codes
        self.batch = batch

    def __call__(self, fn):
        codes, batch = self.codes, self.batch

        def failed(args, code):
            one = code if codes else None
            if not batch:
                return one
            try:
                return [one] * len(args[1])
            except (IndexError, TypeError):
                return []

        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except tf.TorchUnavailable as e:
                _set_last_error(UNAVAILABLE_IN_CURRENT_MODE, str(e))
                return failed(args, UNAVAILABLE_IN_CURRENT_MODE)
            except tf.TensorFormatError as e:
                _set_last_error(INVALID_PARAMS, f"{fn.__name__}: {e}")
                return failed(args, INVALID_PARAMS)

        return run


_code_call = _TensorCall(codes=True)
_none_call = _TensorCall(codes=False)
_codes_call = _TensorCall(codes=True, batch=True)
_nones_call = _TensorCall(codes=False, batch=True)


def _at(ptr: int, size: int):
    """A writable buffer over [ptr, ptr + size), no copy. REQUIRES: the range was checked
    against the registered regions."""
    return (ctypes.c_char * int(size)).from_address(int(ptr))


def _as_int(v) -> Optional[int]:
    """v as an int (numpy integers too), None for anything else (floats, bools included)."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _batch_fail(n: int, code: int, message: str) -> List[int]:
    _set_last_error(code, message)
    return [code] * n
