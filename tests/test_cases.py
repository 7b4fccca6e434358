"""The shared case table, run on every library of the session."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cases import CASES, Case
from helpers import applies, assert_identical, expected, oracle_answer, run_case
from libs import LIBS, Library

PARAMS = [
    pytest.param(lib, case, id=f"{lib.name}-{case.id}")
    for lib in LIBS
    for case in CASES
    if applies(lib, case)
]


@pytest.mark.parametrize(("backend", "case"), PARAMS)
def test_case(backend: Library, case: Case) -> None:
    if case.raises is not None:
        with pytest.raises(case.raises, match=case.match):
            # Read back too: a lazy library (Dask) raises index errors when it computes.
            backend.to_numpy(run_case(backend, case))
        return
    result = backend.to_numpy(run_case(backend, case))
    assert_identical(result, expected(case))


@pytest.mark.parametrize(
    ("backend", "case"),
    [p for p in PARAMS if p.values[1].raises is None],
    ids=lambda x: getattr(x, "id", None),
)
def test_case_with_host_indices(backend: Library, case: Case) -> None:
    """The same case with indices given as a NumPy array and as a Python list."""
    for indices in (case.indices, case.indices.tolist()):
        if np.ndim(case.indices) == 0:
            indices = int(case.indices)
        if isinstance(indices, list) and not indices:
            continue  # an empty list has no ints to infer a dtype from; NumPy path covers it
        if isinstance(indices, list) and case.indices.dtype != np.int64:
            continue  # a Python list becomes int64; the dtype under test would change
        result = backend.to_numpy(run_case(backend, case, indices=indices))
        assert_identical(result, expected(case))


@pytest.mark.parametrize("case", [c for c in CASES if c.expected is not None], ids=lambda c: c.id)
def test_oracle_agrees_with_spec_examples(case: Case) -> None:
    """The loop oracle reproduces every result a spec prints, so it can stand in for the rest."""
    assert_identical(oracle_answer(case), case.expected)


@pytest.mark.parametrize(
    "case",
    # Not the written-indices cases: no ONNX index type holds their values, so the spec
    # (and with it the oracle) has no answer for them; the table's is the library's own.
    [c for c in CASES if c.raises is not None and c.written is None],
    ids=lambda c: c.id,
)
def test_oracle_raises_the_same_type(case: Case) -> None:
    """Every error case is an error of the same type for the oracle: the table is not our opinion."""
    with pytest.raises(case.raises):
        expected(case)
    assert case.match is not None
    assert re.compile(case.match)
