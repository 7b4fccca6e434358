"""Build the optional compiled kernel ``onnx_gather._kernels``.

Everything else about the package lives in pyproject.toml. The extension is optional:
without a working C compiler the build goes on without it and the library falls back to
pure NumPy. ``ONNX_GATHER_NO_EXTENSION=1`` at build time skips it entirely.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

#: The compiled kernel's sources: a shared core (og_core.c, og_core.h), its kept worker
#: threads (og_pool.c), one file per operator and the module's entry points
#: (og_module.c). Relative paths: setuptools refuses absolute ones.
KERNEL_DIR = Path("src/onnx_gather/_c")


def _extensions() -> list[Extension]:
    if os.environ.get("ONNX_GATHER_NO_EXTENSION", "").strip() not in ("", "0"):
        return []
    import numpy  # a build requirement (pyproject's [build-system])

    if sys.platform == "win32":
        compile_args = ["/O2"]
        link_args: list[str] = []
    else:
        # Portable flags only: no -march=native, wheels must run on any CPU of the arch.
        # Hidden visibility: the core's functions, shared by the kernel's files, stay
        # internal to the extension (its init function is exported by PyMODINIT_FUNC).
        # No floating-point contraction: the scatters' reductions must round every step as
        # NumPy does (GCC contracts a * b - c * d into a fused multiply-add where the target
        # has one, e.g. aarch64, by default).
        compile_args = [
            "-O3", "-pthread", "-fno-strict-aliasing", "-fvisibility=hidden",
            "-ffp-contract=off",
        ]  # fmt: skip
        link_args = ["-pthread"]
    return [
        Extension(
            "onnx_gather._kernels",
            sorted(str(p) for p in KERNEL_DIR.glob("*.c")),
            include_dirs=[numpy.get_include(), str(KERNEL_DIR)],
            depends=sorted(str(p) for p in KERNEL_DIR.glob("*.h")),
            define_macros=[("NPY_TARGET_VERSION", "NPY_1_22_API_VERSION")],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
            optional=True,
        )
    ]


setup(ext_modules=_extensions())
