"""Build the optional compiled kernel ``onnx_gather._kernels``.

Everything else about the package lives in pyproject.toml. The extension is optional:
without a working C compiler the build goes on without it and the library falls back to
pure NumPy. ``ONNX_GATHER_NO_EXTENSION=1`` at build time skips it entirely.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup


def _extensions() -> list[Extension]:
    if os.environ.get("ONNX_GATHER_NO_EXTENSION", "").strip() not in ("", "0"):
        return []
    import numpy  # a build requirement (pyproject's [build-system])

    if sys.platform == "win32":
        compile_args = ["/O2"]
        link_args: list[str] = []
    else:
        # Portable flags only: no -march=native, wheels must run on any CPU of the arch.
        compile_args = ["-O3", "-pthread", "-fno-strict-aliasing"]
        link_args = ["-pthread"]
    return [
        Extension(
            "onnx_gather._kernels",
            ["src/onnx_gather/_kernels.c"],
            include_dirs=[numpy.get_include()],
            define_macros=[("NPY_TARGET_VERSION", "NPY_1_22_API_VERSION")],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
            optional=True,
        )
    ]


setup(ext_modules=_extensions())
