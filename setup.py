"""Build the optional compiled kernel ``onnx_gather._kernels``.

Everything else about the package lives in pyproject.toml. The extension is optional:
without a working C compiler the build goes on without it and the library falls back to
pure NumPy. ``ONNX_GATHER_NO_EXTENSION=1`` at build time skips it entirely.

``ONNX_GATHER_SANITIZE=address,undefined`` (GCC or Clang; any list of ``-fsanitize``
names) builds it with those sanitizers for ``nox -s asan``: optimised at -O1, with
frame pointers and debug lines for the reports, and every report fatal
(``-fno-sanitize-recover``). Such a build goes to its own build directory, so that no
later plain build reuses its objects; loading it needs the sanitizer's runtime
preloaded (see the session).
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
#: The sanitizers to build the kernel with (``-fsanitize=``'s list), or "" for none.
SANITIZE = os.environ.get("ONNX_GATHER_SANITIZE", "").strip()


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
        if SANITIZE:
            # -O1 in -O3's place (a later -O wins, so appending one would not do).
            checks = f"-fsanitize={SANITIZE}"
            compile_args[0] = "-O1"
            compile_args += [checks, "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]
            link_args += [checks]
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


# A sanitized build in a directory of its own: setuptools skips a build whose output is
# newer than its sources, and would copy a sanitized one into a plain install.
OPTIONS = (
    {"build": {"build_base": f"build/sanitize-{SANITIZE.replace(',', '-')}"}} if SANITIZE else {}
)
setup(ext_modules=_extensions(), options=OPTIONS)
