"""Per-row rules written once as plain Python, compiled by numba only where it pays.

Some rules are sequential by nature (where a segment rolls, which batch gets an
index entry): each row depends on the decision made at the row before. They are
written as plain functions over int64 arrays; `kernel(fn, compiled)` gives
numba's compiled form of the same function (`njit(cache=True, nogil=True)`,
compiled once per process and cached on disk) or the function itself. One
source for both paths, so they cannot disagree; numba is imported only when a
caller asks for speed (its import costs ~0.6 s, too much for a small write).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


@functools.cache
def _compiled(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    try:
        from numba import njit
    except ImportError:  # pragma: no cover - exercised only where numba is absent
        return None
    compiled: Callable[..., Any] = njit(cache=True, nogil=True)(fn)
    return compiled


def kernel(fn: F, compiled: bool) -> F:
    """`fn` compiled by numba when `compiled` (and numba is installed), else `fn` itself."""
    if not compiled:
        return fn
    fast = _compiled(fn)
    return fn if fast is None else cast(F, fast)


def lazy_kernel(fn: F) -> F:
    """`fn` compiled by numba at its first call, not at import: a module that only sometimes runs a kernel
    (divergence's fingerprints, on large replicas) must not make every command that imports it pay numba's
    import and the cached kernel's load (~0.2 s of a command's start)."""
    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        return kernel(fn, compiled=True)(*args)
    return cast(F, call)
