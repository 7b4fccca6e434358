"""The test matrix: one ``tests`` and one ``conformance`` session per file in backends/, plus
lint, typecheck, a NumPy-only session and a benchmark smoke run. ``nox`` with no arguments
runs them all.

Uses nox's default virtualenv backend with pip: the CPU build of torch this project pins
is found by pip, not by uv.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
BACKENDS = sorted(p.stem for p in (ROOT / "backends").glob("*.txt"))
# Extra environments a backend's tests must also pass under.
VARIANTS: dict[str, list[dict[str, str]]] = {
    "jax": [{"JAX_ENABLE_X64": "0"}, {"JAX_ENABLE_X64": "1"}],
}


def install_backend(session: nox.Session, backend: str) -> None:
    # The backend's own pins first, so that nothing later resolves a framework afresh.
    session.install("-r", f"backends/{backend}.txt")
    session.install("-e", ".[test]")


@nox.session
@nox.parametrize("backend", BACKENDS)
def tests(session: nox.Session, backend: str) -> None:
    """The shared case table, the official ONNX cases and the API tests on one backend.

    The property tests run in ``conformance``, with its larger budget.
    """
    install_backend(session, backend)
    for env in VARIANTS.get(backend, [{}]):
        # The fixture fails the run if this backend cannot be imported: never a green skip.
        session.run(
            "pytest",
            "--ignore=tests/test_properties.py",
            *session.posargs,
            env={"ONNX_GATHER_BACKENDS": backend, **env},
        )


@nox.session
@nox.parametrize("backend", BACKENDS)
def conformance(session: nox.Session, backend: str) -> None:
    """The official ONNX node cases and the property tests on one backend, plus `check`.

    ONNX_GATHER_EXAMPLES sets the property tests' budget per operator (default 300; a
    long campaign sets more, see docs/conformance.md).
    """
    install_backend(session, backend)
    examples = os.environ.get("ONNX_GATHER_EXAMPLES", "300")
    for env in VARIANTS.get(backend, [{}]):
        session.run(
            "pytest",
            "tests/test_onnx_node_cases.py",
            "tests/test_properties.py",
            *session.posargs,
            env={"ONNX_GATHER_BACKENDS": backend, "ONNX_GATHER_EXAMPLES": examples, **env},
        )
    session.run("python", "-m", "onnx_gather", "check", "--examples", "20")


@nox.session
def numpy_only(session: nox.Session) -> None:
    """The plain install (numpy and array-api-compat only) imports and works."""
    session.install(".")
    session.install("pytest")
    session.run("python", "-m", "onnx_gather")
    session.run("pytest", "tests/test_import.py", env={"ONNX_GATHER_BACKENDS": "numpy"})


@nox.session
def bench(session: nox.Session) -> None:
    """A smoke run of the benchmarks (tiny sizes, few rounds, no thresholds).

    It proves the runner and its report work; the full run, which writes
    docs/benchmarks.md and docs/benchmarks.png, is ``python -m benchmarks``.
    """
    session.install(
        "-r", "backends/numpy.txt", "-r", "backends/torch.txt", "-r", "backends/jax.txt"
    )
    session.install("-e", ".[test]", "matplotlib")
    session.run("python", "-m", "benchmarks", "--smoke", "--out", session.create_tmp())


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package."""
    # The test extra brings hypothesis, whose types the _conformance package uses.
    session.install("mypy", "-e", ".[test]")
    session.run("mypy")
