"""The libraries this test run covers.

Each is a ``onnx_gather._conformance.libraries.Library`` (NumPy -> library -> NumPy, which
ONNX types it holds, and the check that a result is the library's own array, for Dask of
the declared blocks), shared with ``python -m onnx_gather``.

The nox matrix sets ONNX_GATHER_BACKENDS to the libraries a session must test (comma
separated). A named library that cannot be imported fails the run: a matrix cell can
never pass green by skipping. Unset, every importable host library is tested; device
ones (``torch[cuda]``, ``cupy``) run the table only when named, on a machine that has one.
"""

from __future__ import annotations

import os

from onnx_gather._conformance.libraries import HOST, Library, bfloat16, installed

ENV = "ONNX_GATHER_BACKENDS"
BFLOAT16 = bfloat16()


def selected() -> list[Library]:
    """The libraries this run tests: ONNX_GATHER_BACKENDS, or every importable host one."""
    wanted = os.environ.get(ENV, "").strip()
    if not wanted:
        return [lib for lib in installed() if lib.name in HOST]
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    try:
        # A named library is built or raises: a matrix cell cannot pass by skipping.
        return installed(names)
    except ValueError as exc:
        raise RuntimeError(f"{ENV}: {exc}") from exc


#: This run's libraries, chosen once: a named library that cannot be imported fails here.
LIBS: list[Library] = selected()
