"""The test matrix: one ``tests`` (every test, the property tests included, and ``check``)
and one ``oldest`` (the same tests on the declared floors of constraints/floors.txt)
session per file in backends/, plus lint, typecheck, a NumPy-only session, replays and a
benchmark smoke run. ``nox`` with no arguments runs them all; ``conformance`` (the
official ONNX cases, the property tests and ``check`` alone) is for long campaigns.

Uses nox's default virtualenv backend with pip: the CPU build of torch this project pins
is found by pip, not by uv.
"""

from __future__ import annotations

import atexit
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nox

nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
#: What ``nox`` runs: every session but ``conformance``, whose tests ``tests`` runs in the
#: same environment (a fresh environment per backend cost a minute or more of installs).
nox.options.sessions = [
    "tests", "oldest", "numpy_only", "bench", "lint", "typecheck", "replay", "no_compiler",
    "triton_interpreter", "converters", "docs", "asan",
]  # fmt: skip

ROOT = Path(__file__).parent
BACKENDS = sorted(p.stem for p in (ROOT / "backends").glob("*.txt"))
# Extra environments a backend's tests must also pass under.
VARIANTS: dict[str, list[dict[str, str]]] = {
    "jax": [{"JAX_ENABLE_X64": "0"}, {"JAX_ENABLE_X64": "1"}],
}
#: The property tests (tests/test_properties.py) run in a backend's first variant only: JAX's
#: default, x64 off. The case table and every other test run in each variant. (A full CI
#: run took 61 minutes on the 2-core machine, against the 45 it should; the second JAX pass
#: of the properties was 4 of them.)
PROPERTIES = "tests/test_properties.py"
#: Property examples per operator, by backend, where the default (300) costs too much: a
#: Dask example builds and computes a task graph (the session took 8 minutes at 300).
EXAMPLES = {"dask": "100"}
#: The oldest JAX runs one variant, x64 on (64-bit types exist: the widest coverage).
OLDEST_VARIANTS = {"jax": [{"JAX_ENABLE_X64": "1"}]}
#: Torch's floor is the release ``tests`` runs (constraints/floors.txt): its modules that
#: exercise torch alone (compile, export, Dynamo) would repeat ``tests(torch)`` exactly.
OLDEST_SKIPS = {
    "torch": [
        "tests/test_transforms_table.py", "tests/test_torch_compiled_cases.py",
        "tests/test_torch_compiled_scatters.py", "tests/test_torch_dynamo_entry.py",
    ],
}  # fmt: skip


#: pytest spread over the machine's cores (pytest-xdist, one worker process per core, at
#: most 4: each imports its frameworks), unless ONNX_GATHER_WORKERS says how many ("0":
#: in this process). Each worker runs its own share in its own order, so a test that
#: passed only after another fails here too.
PYTEST = (
    "pytest", "-n", os.environ.get("ONNX_GATHER_WORKERS", str(min(os.cpu_count() or 1, 4))),
)  # fmt: skip

#: Each session run, with its time (installs included, the new virtualenv's not).
_TIMES: list[tuple[str, float]] = []


def session(fn: Callable[..., None]) -> Any:
    """``nox.session``, its run timed: every session's time is printed at the end."""

    @functools.wraps(fn)
    def timed(session: nox.Session, **parameters: Any) -> None:
        start = time.monotonic()
        try:
            fn(session, **parameters)
        finally:
            _TIMES.append((session.name, time.monotonic() - start))

    return nox.session(timed)


@atexit.register
def _print_times() -> None:
    """What each session of this run cost, the longest first, and the total."""
    if not _TIMES:
        return
    print("\nnox session times (this run):")
    for name, seconds in sorted(_TIMES, key=lambda t: -t[1]):
        print(f"  {seconds / 60:6.1f} min  {name}")
    print(f"  {sum(t for _, t in _TIMES) / 60:6.1f} min  in all")


def install_backend(session: nox.Session, backend: str) -> None:
    # The backend's own pins first, so that nothing later resolves a framework afresh.
    session.install("-r", f"backends/{backend}.txt")
    session.install("-e", ".[test]")


@session
@nox.parametrize("backend", BACKENDS)
def tests(session: nox.Session, backend: str) -> None:
    """Every test on one backend, the property tests included, then ``check``.

    The case table, the official ONNX cases, the API tests, the property tests
    (ONNX_GATHER_EXAMPLES examples per operator, default 300, Dask's 100: ``EXAMPLES``; in
    the backend's first variant only: ``PROPERTIES``), then ``python -m onnx_gather check``.

    Tests that use no library but NumPy (tests/conftest.py's NUMPY_ONLY: the compiled
    kernels, the oracle, OpenVINO's runtime, the floors, ...) run in
    ``tests(backend='numpy')`` and ``oldest(backend='numpy')`` only: deselected in the
    others, where they gave the same outcome, since every session installs the same NumPy
    and test tools.
    """
    install_backend(session, backend)
    examples = os.environ.get("ONNX_GATHER_EXAMPLES", EXAMPLES.get(backend, "300"))
    for n, env in enumerate(VARIANTS.get(backend, [{}])):
        # The fixture fails the run if this backend cannot be imported: never a green skip.
        # The compiled kernel is optional at build time: here its absence is a failure.
        session.run(
            *PYTEST,
            *([f"--ignore={PROPERTIES}"] if n else []),
            *session.posargs,
            env={
                "ONNX_GATHER_BACKENDS": backend,
                "ONNX_GATHER_EXPECT_KERNEL": "built",
                "ONNX_GATHER_EXAMPLES": examples,
                **env,
            },
        )
    session.run("python", "-m", "onnx_gather", "check", "--examples", "20")


@session
@nox.parametrize("backend", BACKENDS)
def oldest(session: nox.Session, backend: str) -> None:
    """``tests`` on the oldest releases the package declares (constraints/floors.txt).

    Every runtime dependency is held at its declared floor, and so is onnx (see the
    file); the other test tools take their newest releases that fit those pins. The
    compiled kernel, built against NumPy 2's headers, must load on the oldest NumPy. No
    property tests; JAX in one variant (``OLDEST_VARIANTS``); torch without the modules
    that would repeat ``tests(torch)`` (``OLDEST_SKIPS``).
    """
    floors = ("--constraint", "constraints/floors.txt")
    session.install(*floors, "-r", f"backends/{backend}.txt")
    session.install(*floors, "-e", ".[test]")
    if backend == "jax":
        # jax 0.4.38's jax.export imports absl without declaring it (the tests export).
        session.install(*floors, "absl-py")
    skips = [f"--ignore={path}" for path in (PROPERTIES, *OLDEST_SKIPS.get(backend, []))]
    for env in OLDEST_VARIANTS.get(backend, VARIANTS.get(backend, [{}])):
        session.run(
            *PYTEST,
            *skips,
            *session.posargs,
            env={"ONNX_GATHER_BACKENDS": backend, "ONNX_GATHER_EXPECT_KERNEL": "built", **env},
        )


@session
@nox.parametrize("backend", BACKENDS)
def conformance(session: nox.Session, backend: str) -> None:
    """The official ONNX node cases and the property tests on one backend, plus `check`.

    Not part of a plain ``nox`` run (``tests`` runs these too): for long campaigns,
    ONNX_GATHER_EXAMPLES sets the property tests' budget per operator (default 300; see
    docs/conformance.md).
    """
    install_backend(session, backend)
    examples = os.environ.get("ONNX_GATHER_EXAMPLES", "300")
    for env in VARIANTS.get(backend, [{}]):
        session.run(
            *PYTEST,
            "tests/test_onnx_node_cases.py",
            "tests/test_properties.py",
            *session.posargs,
            env={"ONNX_GATHER_BACKENDS": backend, "ONNX_GATHER_EXAMPLES": examples, **env},
        )
    session.run("python", "-m", "onnx_gather", "check", "--examples", "20")


@session
def numpy_only(session: nox.Session) -> None:
    """The plain install (numpy and array-api-compat only) imports and works."""
    session.install(".")
    session.install("pytest")
    session.run("python", "-m", "onnx_gather")
    session.run("pytest", "tests/test_import.py", env={"ONNX_GATHER_BACKENDS": "numpy"})


@session
def bench(session: nox.Session) -> None:
    """A smoke run of the benchmarks (tiny sizes, few rounds, no thresholds).

    It proves the runners and their reports work; the full runs, which write
    docs/benchmarks.md and docs/benchmarks.png, and docs/dask-benchmark.md, are
    ``python -m benchmarks`` and ``python -m benchmarks.dask_large``.
    """
    session.install(
        "-r", "backends/numpy.txt", "-r", "backends/torch.txt", "-r", "backends/jax.txt",
        "-r", "backends/dask.txt",
    )  # fmt: skip
    session.install("-e", ".[test]", "matplotlib")
    tmp = Path(session.create_tmp())
    session.run("python", "-m", "benchmarks", "--smoke", "--out", str(tmp))
    session.run("python", "-m", "benchmarks.dask_large", "--smoke", "--out", str(tmp / "dask.md"))


@session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package."""
    # The test extra brings hypothesis, whose types the _conformance package uses.
    session.install("mypy", "-e", ".[test]")
    session.run("mypy")


@session
def replay(session: nox.Session) -> None:
    """Real models replayed on every library, and OpenVINO's runtime on its cases.

    tests/test_torch_replay.py exports small torch models (embedding, shape arithmetic, gathers
    with negative indices, top-k, index_select) at opsets 9-17 with the TorchScript exporter,
    tests/test_torch_replay_dynamo.py models with advanced indexing (GatherND) at opsets
    17-20 with the dynamo exporter (onnxscript, installed here alone), captures every node of
    the family in ONNX Runtime and replays it on each library; tests/test_openvino_runtime.py
    runs the OpenVINO cases on OpenVINO's CPU plugin. Needs torch, so it installs every
    backend in one environment.
    """
    libraries = ["numpy", "torch", "jax", "dask", "array-api-strict"]
    # The backends' own pins first, in one resolve, as install_backend does for one.
    session.install(*(arg for library in libraries for arg in ("-r", f"backends/{library}.txt")))
    session.install("-e", ".[test]", "onnxscript")
    for env in VARIANTS["jax"]:  # JAX with and without x64 (int64 shape tensors need it)
        session.run(
            *PYTEST,
            "tests/test_torch_replay.py",
            "tests/test_torch_replay_dynamo.py",
            "tests/test_openvino_runtime.py",
            *session.posargs,
            env={
                "ONNX_GATHER_BACKENDS": ",".join(libraries),
                "ONNX_GATHER_TOOLS": "onnxscript",
                **env,
            },
        )


@session
def converters(session: nox.Session) -> None:
    """The converter plug-ins and the exporters, each tool as it ships, against ONNX Runtime.

    In: onnx2torch (tests/test_torch_onnx2torch.py) and jaxonnxruntime
    (tests/test_jax_jaxonnxruntime.py, with JAX's x64 mode for int64 data), each as it
    ships and with the library's plug-in, installed without their dependencies:
    onnx2torch requires torchvision, whose wheels on this machine's package index pull
    another torch build (the test module puts a stand-in in its place; see its
    docstring); jaxonnxruntime imports absl without declaring it.

    Out (the ``export`` extra): tests/test_torch_onnx_export.py exports every operator
    with torch's dynamo exporter (the default ``torch.onnx.export``; onnxscript) and its
    TorchScript one; tests/test_jax_jax2onnx.py converts with jax2onnx and the library's
    plug-in; the replay tests' real models go through onnx2torch with its plug-in and back
    out through the dynamo exporter; the page "Exporting to ONNX" runs its examples. One
    environment for both: each would install torch and JAX again.
    """
    session.install("-r", "backends/torch.txt", "-r", "backends/jax.txt")
    session.install("-e", ".[test,export]")
    session.install("--no-deps", "onnx2torch==1.5.15", "jaxonnxruntime==0.3.0")
    session.install("absl-py")
    env = {
        "ONNX_GATHER_BACKENDS": "torch,jax",
        "ONNX_GATHER_TOOLS": "onnx2torch,jaxonnxruntime,onnxscript,jax2onnx",
        "JAX_ENABLE_X64": "1",
    }
    session.run(
        *PYTEST, "tests/test_torch_onnx2torch.py", "tests/test_jax_jaxonnxruntime.py",
        "tests/test_torch_onnx_export.py", "tests/test_jax_jax2onnx.py", *session.posargs,
        env=env,
    )  # fmt: skip
    session.run("pytest", "tests/test_docs.py", "-k", "exporting", env=env)
    # The converted-graph benchmark runs too: its table is in docs/converters.md.
    session.run("python", "-m", "benchmarks.converted_graph")


@session
def no_compiler(session: nox.Session) -> None:
    """A machine without a C compiler: the install goes on without the compiled kernel.

    The package is built from source with CC and CXX pointing at /bin/false, so the
    optional extension fails to build; the case table, the API tests, the fallback's
    forced fast paths and the scatters' tests then run on NumPy and on torch CPU tensors
    (torch's own kernels).
    """
    session.install("-r", "backends/numpy.txt", "-r", "backends/torch.txt", "build")
    # From an sdist, as such a machine gets it: no build/ leftovers of this tree inside.
    outdir = session.create_tmp()
    session.run("python", "-m", "build", "--sdist", "--outdir", outdir, silent=True)
    (sdist,) = Path(outdir).glob("onnx_gather-*.tar.gz")
    no_cc = {"CC": "/bin/false", "CXX": "/bin/false", "PIP_NO_CACHE_DIR": "1"}
    package = f"onnx-gather[test] @ {sdist.resolve().as_uri()}"
    session.install("--force-reinstall", "--no-deps", package, env=no_cc)
    session.install(package, env=no_cc)  # the test extra's dependencies
    session.run(
        *PYTEST,
        "tests/test_compiled_kernel.py",
        "tests/test_cases.py",
        "tests/test_api.py",
        "tests/test_fast_paths.py",
        "tests/test_scatters.py",
        *session.posargs,
        env={"ONNX_GATHER_BACKENDS": "numpy,torch", "ONNX_GATHER_EXPECT_KERNEL": "absent"},
    )


@session
def triton_interpreter(session: nox.Session) -> None:
    """The Triton kernels of torch on CUDA, run by Triton's interpreter on the CPU.

    ``TRITON_INTERPRET=1`` makes ``@triton.jit`` kernels run in NumPy on CPU tensors, so
    tests/test_torch_triton.py runs the whole case table and the property tests through them
    without a GPU (about 20 s here). triton is installed without dependencies: its wheel
    must not bring another torch.
    """
    session.install("-r", "backends/torch.txt")
    session.install("--no-deps", "triton==3.9.0")
    session.install("-e", ".[test]")
    session.run(
        *PYTEST,
        "tests/test_torch_triton.py",
        *session.posargs,
        # ONNX_GATHER_TOOLS: the module runs only where it names triton, and there a triton
        # that cannot be imported fails the session instead of skipping it green.
        env={
            "TRITON_INTERPRET": "1",
            "ONNX_GATHER_BACKENDS": "torch",
            "ONNX_GATHER_TOOLS": "triton",
        },
    )


@session
def docs(session: nox.Session) -> None:
    """The documentation site: ``docs/_build/html`` (open its ``index.html``).

    Sphinx with every warning an error (a broken link or cross-reference, a page outside
    every toctree, a docstring numpydoc cannot read), then the pages' examples: every
    ``>>>`` block of docs/ and the README on NumPy (the examples of other libraries run in
    their ``tests`` sessions, tests/test_docs.py).
    """
    session.install("-e", ".[docs,check]", "pytest")
    session.run(
        "python", "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
        "docs", "docs/_build/html",
    )  # fmt: skip
    session.run("pytest", "tests/test_docs.py", env={"ONNX_GATHER_BACKENDS": "numpy"})


@session
def asan(session: nox.Session) -> None:
    """The compiled kernel built with AddressSanitizer and UndefinedBehaviorSanitizer.

    The kernel is built with ``-fsanitize=address,undefined -fno-sanitize-recover=all``
    at -O1 (setup.py's ``ONNX_GATHER_SANITIZE``) and installed, not editable, into this
    environment alone: it loads only with the sanitizer's runtime preloaded, which no
    other session has. Every report is fatal. Then: the NumPy-backend suite (the kernel's
    own tests, tests/test_kernel_boundary.py's malformed calls among them), the generated
    calls aimed at the kernel (tests/test_kernel_generated.py) at ``ASAN_EXAMPLES``
    examples a test, and the torch tests that reach the kernel (``ASAN_TORCH``).

    libstdc++ is preloaded with ASan's runtime: a C++ exception thrown inside torch or
    ONNX Runtime otherwise aborts the process under ASan. OpenVINO's runtime cannot load
    under ASan (its TBB is opened with RTLD_DEEPBIND, which the sanitizer's runtime
    refuses: google/sanitizers#611), so its tests are deselected here:
    tests/test_openvino_runtime.py, tests/test_openvino_model.py and the OpenVINO peers
    of tests/test_properties.py. The library's own OpenVINO operators still run. Needs
    GCC (or Clang) and its ASan runtime (``gcc -print-file-name=libasan.so``).
    """
    session.install("-r", "backends/numpy.txt", "-r", "backends/torch.txt")
    session.install(".[test]", env={"ONNX_GATHER_SANITIZE": "address,undefined"})
    runtime = [
        session.run("gcc", f"-print-file-name={name}", external=True, silent=True).strip()
        for name in ("libasan.so", "libstdc++.so")
    ]
    env = {
        "LD_PRELOAD": ":".join(runtime),
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1",
        "UBSAN_OPTIONS": "print_stacktrace=1",
        "ONNX_GATHER_EXPECT_KERNEL": "built",
    }
    # The kernel the tests import is this environment's, and sanitized.
    session.run("python", "-c", ASAN_BUILT, env=env)
    # --capture=sys: a sanitizer's report, written to fd 2 just before it aborts the
    # process, reaches the log instead of pytest's capture file.
    pytest = ("pytest", "--capture=sys")
    no_openvino = [
        "--ignore=tests/test_openvino_runtime.py",
        "--ignore=tests/test_openvino_model.py",
        "-k", "not (test_properties and openvino)",
    ]  # fmt: skip
    session.run(
        *pytest, *no_openvino, "--ignore=tests/test_kernel_generated.py", *session.posargs,
        env={**env, "ONNX_GATHER_BACKENDS": "numpy"},
    )  # fmt: skip
    session.run(
        *pytest, "tests/test_kernel_generated.py", *session.posargs,
        env={**env, "ONNX_GATHER_BACKENDS": "numpy", "ONNX_GATHER_EXAMPLES": ASAN_EXAMPLES},
    )  # fmt: skip
    session.run(
        *pytest, *ASAN_TORCH, *session.posargs, env={**env, "ONNX_GATHER_BACKENDS": "torch"}
    )


#: ``asan``'s check that the kernel under test is the sanitized build of this environment.
ASAN_BUILT = """
import sysconfig
from pathlib import Path
import onnx_gather._kernels as k
kernel = Path(k.__file__)
assert kernel.is_relative_to(sysconfig.get_paths()["purelib"]), kernel
assert b"__asan_report_" in kernel.read_bytes() and b"__ubsan_handle_" in kernel.read_bytes()
"""
#: Generated kernel calls per test in ``asan`` (tests/test_kernel_generated.py).
ASAN_EXAMPLES = "1000"
#: The torch tests that reach the compiled kernel: eager calls on views of CPU tensors (by
#: address too), its scatters under torch.compile, and the generic tests run on torch.
ASAN_TORCH = [
    "tests/test_torch_eager.py", "tests/test_torch_scatters.py",
    "tests/test_torch_zero_tensors.py", "tests/test_torch_layouts.py",
    "tests/test_torch_compiled_scatters.py", "tests/test_cases.py", "tests/test_api.py",
    "tests/test_scatters.py", "tests/test_tensor_scatter.py", "tests/test_fast_paths.py",
    "tests/test_corners.py",
]  # fmt: skip
