"""Importing onnx_gather imports no framework, and nothing a call does not need yet."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("torch", "jax", "jaxlib", "dask", "cupy", "distributed")


def _loaded_after(code: str) -> set[str]:
    script = textwrap.dedent(
        f"""
        import sys
        {code}
        heavy = {HEAVY!r}
        print(sorted({{m.split('.')[0] for m in sys.modules}} & set(heavy)))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(eval(out.stdout.strip()))


def test_import_loads_no_framework() -> None:
    assert _loaded_after("import onnx_gather, onnx_gather.openvino") == set()


def test_numpy_call_loads_no_framework() -> None:
    code = """
        import numpy as np, onnx_gather as og
        og.gather(np.arange(3), [0]); og.gather_elements(np.arange(3), [2])
        from onnx_gather import openvino
        openvino.gather_elements(np.arange(3), [1], 0)
        """
    assert _loaded_after(textwrap.dedent(code).strip().replace("\n", "; ")) == set()


#: What ``array_api_compat.numpy`` brings (it reads every attribute of NumPy): about 0.1 s,
#: more than the package's own import. Imported when a call first needs it.
SLOW = ("array_api_compat.numpy", "numpy.f2py", "numpy.testing")


def _modules_after(code: str, names: tuple[str, ...]) -> list[str]:
    script = f"import sys\n{code}\nprint(sorted(set(sys.modules) & set({names!r})))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return list(eval(out.stdout.strip()))


def test_import_loads_no_array_api_compat_numpy() -> None:
    assert _modules_after("import numpy, onnx_gather, onnx_gather.openvino", SLOW) == []
    # The names are spelled right: the first read of the namespace imports it.
    code = "import onnx_gather._host as h; h.NUMPY_XP.int64"
    assert _modules_after(code, SLOW[:1]) == list(SLOW[:1])


def test_compiled_numpy_gathers_load_no_array_api_compat_numpy() -> None:
    """The compiled kernel checks the indices itself: the namespace stays unimported."""
    if importlib.util.find_spec("onnx_gather._kernels") is None:
        pytest.skip("built without the compiled kernel (its fallback reads the namespace)")
    code = """
        import numpy as np, onnx_gather as og
        d = np.arange(12.0).reshape(3, 4)
        og.gather(d, [0, -1]); og.gather_elements(d, [[-1]], axis=1); og.gather_nd(d, [[0, -1]])
        """
    assert _modules_after(textwrap.dedent(code).strip(), SLOW) == []


def test_lazy_numpy_namespace_first_read_from_many_threads() -> None:
    """Threads that read the namespace first, at once, each get the whole module."""
    code = textwrap.dedent(
        """
        import threading, numpy as np
        from onnx_gather import _host
        barrier, got = threading.Barrier(8), []

        def first_read():
            barrier.wait()
            xp = _host.NUMPY_XP
            got.append((xp.astype(np.arange(3, dtype=np.int32), xp.int64), xp.where))

        threads = [threading.Thread(target=first_read) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        import array_api_compat.numpy as compat
        assert len(got) == 8, got
        for cast, where in got:
            assert cast.dtype == np.int64 and cast.tolist() == [0, 1, 2], cast
            assert where is compat.where
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)
