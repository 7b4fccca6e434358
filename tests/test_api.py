"""Behaviour around the table: argument forms, library mixing, aliasing, views."""

from __future__ import annotations

import enum
import inspect
import re
from typing import Any

import numpy as np
import pytest
from helpers import assert_identical
from libs import LIBS, Library

import onnx_gather as og
from onnx_gather import openvino
from onnx_gather._conformance.libraries import NotOwnArray


def _namespace(lib: Library, x: Any) -> Any:
    import array_api_compat

    return array_api_compat.array_namespace(x)


def _shares_memory(lib: Library, a: Any, b: Any) -> bool:
    if lib.name == "numpy":
        return bool(np.shares_memory(a, b))
    if lib.name.startswith("torch"):  # torch[cuda] too
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    if lib.name == "jax":
        return a.unsafe_buffer_pointer() == b.unsafe_buffer_pointer()
    if lib.name == "dask":
        # Computed in one pass, so blocks that share memory stay shared; test_dask.py holds
        # the sharper check on single-block arrays.
        return bool(np.shares_memory(*lib.module.compute(a, b, scheduler="sync")))
    if lib.name == "cupy":
        return bool(lib.module.shares_memory(a, b))
    return bool(np.shares_memory(np.from_dlpack(a), np.from_dlpack(b)))


def test_signatures() -> None:
    for fn, attribute in (
        (og.gather, "axis"),
        (og.gather_elements, "axis"),
        (og.gather_nd, "batch_dims"),
    ):
        params = inspect.signature(fn).parameters
        assert [p.kind for p in params.values()] == [
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
            inspect.Parameter.KEYWORD_ONLY,
        ]
        assert list(params)[2] == attribute
        assert params[attribute].default == 0
        assert params["opset"].default == 13
        assert params["check_bounds"].default is True
    params = inspect.signature(openvino.gather_elements).parameters
    assert params["axis"].default is inspect.Parameter.empty
    with pytest.raises(TypeError):
        og.gather(data=np.arange(3), indices=[0])  # type: ignore[call-arg]


def test_axis_by_keyword_and_position(lib: Library) -> None:
    data = lib.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    by_kw = lib.to_numpy(og.gather(data, [2, 0], axis=1))
    by_pos = lib.to_numpy(og.gather(data, [2, 0], 1))
    assert_identical(by_kw, np.array([[2, 0], [5, 3]], np.int32))
    assert_identical(by_pos, by_kw)


class Channel(enum.IntEnum):
    """An int subclass as an index (issue 23, item 10)."""

    RED = 0
    GREEN = 1


@pytest.mark.parametrize(
    "indices",
    [1, -1, np.int64(1), np.int32(-2), [1, 0], (1, 0), [[1], [0]], np.array([1, 0], np.int32),
     Channel.GREEN, [Channel.GREEN, Channel.RED], range(2), range(2, -1, -1)],
    ids=repr,
)  # fmt: skip
def test_host_index_forms(lib: Library, indices: Any) -> None:
    data_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = lib.to_numpy(og.gather(lib.asarray(data_np), indices, axis=1))
    assert_identical(got, np.take(data_np, np.asarray(indices), axis=1))


@pytest.mark.parametrize("empty", [[], range(0), range(5, 5)], ids=repr)
def test_empty_list_indices(lib: Library, empty: Any) -> None:
    data_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = lib.to_numpy(og.gather(lib.asarray(data_np), empty, axis=1))
    assert got.shape == (2, 0)
    assert got.dtype == np.float32


@pytest.mark.parametrize(
    ("indices", "value"),
    [(range(2**63, 2**63 + 2), 2**63), (range(-(2**63) - 2, -(2**63)), -(2**63) - 2)],
    ids=["above-int64", "below-int64"],
)
def test_range_beyond_int64_is_out_of_range(lib: Library, indices: range, value: int) -> None:
    """A range no int64 holds is an out-of-range index, as the same Python ints are."""
    data = lib.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    for check_bounds in (True, False):
        with pytest.raises(IndexError, match=rf"index {value} at position \(0,\)"):
            lib.to_numpy(og.gather(data, indices, axis=1, check_bounds=check_bounds))


@pytest.mark.parametrize("flag", [None, "", [], 0, 1, "yes", 0.0], ids=repr)
def test_check_bounds_must_be_a_bool(lib: Library, flag: Any) -> None:
    """A falsy None or 0 forwarded by a wrapper must not turn the check off (issue 23, 12)."""
    data = lib.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    for fn in (og.gather, og.gather_elements, og.gather_nd):
        with pytest.raises(
            TypeError, match=rf"check_bounds must be a bool, got {re.escape(repr(flag))}"
        ):
            fn(data, [[0]], check_bounds=flag)


def test_check_bounds_takes_numpy_bools(lib: Library) -> None:
    data = lib.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(IndexError, match="index 7"):
        lib.to_numpy(og.gather(data, [7], axis=1, check_bounds=np.True_))
    got = lib.to_numpy(og.gather(data, [1], axis=1, check_bounds=np.False_))
    assert_identical(got, np.array([[1.0], [4.0]], np.float32))


@pytest.mark.parametrize("bad", [[0.5, 1.0], [True, False], True, ["a"]], ids=repr)
def test_host_indices_of_wrong_type(lib: Library, bad: Any) -> None:
    data = lib.asarray(np.arange(3, dtype=np.float32))
    with pytest.raises(
        TypeError, match=r"indices must be int32 or int64, got (float64|bool|string)"
    ):
        og.gather(data, bad)


def test_indices_from_another_library_name_both(lib: Library) -> None:
    data = lib.asarray(np.arange(3, dtype=np.float32))
    others = [o for o in LIBS if o.module is not lib.module and o.name != "numpy"]
    if not others:
        # Only NumPy is loaded beside this library: a foreign object stands in.
        class Foreign:
            pass

        foreign: Any = Foreign()
        with pytest.raises(
            TypeError, match=rf"indices is a .*Foreign but data is a {lib.module.__name__}"
        ):
            og.gather(data, foreign)
        return
    for other in others:
        idx = other.asarray(np.array([0, 1], np.int32))
        library = other.module.__name__
        with pytest.raises(
            TypeError,
            match=rf"indices is a {library} .* but data is a {lib.module.__name__}",
        ):
            og.gather(data, idx)


@pytest.mark.parametrize("data", [[1, 2, 3], 3.0, "abc", None], ids=repr)
def test_data_must_be_an_array(data: Any) -> None:
    with pytest.raises(TypeError, match=f"got .* of type {type(data).__name__}"):
        og.gather(data, [0])


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"opset": "13"}, "opset must be an int, got '13'"),
        ({"opset": 13.0}, "opset must be an int, got 13.0"),
        ({"opset": True}, "opset must be an int, got True"),
        ({"axis": 0.0}, "axis must be an int, got 0.0"),
        ({"axis": None}, "axis must be an int, got None"),
    ],
)
def test_argument_types(lib: Library, kw: dict[str, Any], match: str) -> None:
    data = lib.asarray(np.arange(3, dtype=np.float32))
    with pytest.raises(TypeError, match=match):
        og.gather(data, [0], **kw)
    with pytest.raises(TypeError, match=match):
        og.gather_elements(data, [0], **kw)


def test_axis_accepts_integer_likes(lib: Library) -> None:
    data = lib.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    got = lib.to_numpy(og.gather(data, [0], axis=np.int64(-1)))
    assert_identical(got, np.array([[0.0], [3.0]], np.float32))


@pytest.mark.parametrize("op", ["gather", "gather_elements", "openvino", "gather_nd"])
def test_inputs_untouched_and_result_not_aliased(lib: Library, op: str) -> None:
    data_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx_np = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 1, 1]], np.int32)
    idx_np = idx_np - 2  # negative indices are normalised: not in the caller's array
    if op == "gather_nd":  # (3, 2, 1): batch dim 1, one coordinate into axis 1 (size 4)
        idx_np = idx_np[:, :2, None]
    data, idx = lib.asarray(data_np), lib.asarray(idx_np)
    fn = {
        "gather": og.gather,
        "gather_elements": og.gather_elements,
        "openvino": openvino.gather_elements,
        "gather_nd": og.gather_nd,
    }[op]
    out = fn(data, idx, 1)
    assert_identical(lib.to_numpy(data), data_np)
    assert_identical(lib.to_numpy(idx), idx_np)
    assert not _shares_memory(lib, out, data)
    assert not _shares_memory(lib, out, idx)


def test_identity_gather_does_not_alias(lib: Library) -> None:
    """Even a gather that reproduces data exactly returns new memory."""
    data = lib.asarray(np.arange(4, dtype=np.float32))
    out = og.gather(data, lib.asarray(np.arange(4, dtype=np.int32)))
    assert not _shares_memory(lib, out, data)


def test_non_contiguous_inputs(lib: Library) -> None:
    """Transposed and strided views of data and indices give the spec's result."""
    base = np.arange(60, dtype=np.float32).reshape(5, 12)
    data = lib.asarray(base)
    xp = _namespace(lib, data)
    view = xp.permute_dims(data, (1, 0))[::2, :]  # (6, 5), neither C- nor F-contiguous
    view_np = base.T[::2, :]
    idx_base = np.array([[4, -1, 0, 2, 3, 1], [0, 0, -5, 1, 2, 2]], np.int32)
    idx = xp.permute_dims(lib.asarray(idx_base), (1, 0))  # (6, 2)
    idx_np = idx_base.T
    got = lib.to_numpy(og.gather_elements(view, idx, axis=1))
    assert_identical(got, np.take_along_axis(view_np, idx_np, axis=1))
    got = lib.to_numpy(og.gather(view, idx, axis=1))
    assert_identical(got, np.take(view_np, idx_np, axis=1))
    # GatherND: (6, 2) tuples into the view's two axes (6 and 5), negatives per coordinate.
    got = lib.to_numpy(og.gather_nd(view, idx))
    assert_identical(got, view_np[idx_np[:, 0], idx_np[:, 1]])
    got = lib.to_numpy(og.gather_nd(view, idx[:, :1], 1))  # batch dim 1: row r, column idx
    assert_identical(got, view_np[np.arange(6), idx_np[:, 0]])


def test_numpy_negative_strides() -> None:
    base = np.arange(20, dtype=np.int16).reshape(4, 5)
    data, idx = base[::-1, ::-2], np.array([[2, -1, 0], [1, 1, 1]])[:, ::-1]
    assert_identical(
        og.gather_elements(data, idx, axis=1), np.take_along_axis(data[:2], idx, axis=1)
    )
    assert_identical(og.gather(data, idx, axis=0), np.take(data, idx, axis=0))


def test_out_of_range_message_is_complete(lib: Library) -> None:
    """Operator, value, position, axis and size, all in one message."""
    data = lib.asarray(np.zeros((2, 5, 3), np.float32))
    idx = lib.asarray(np.array([[[0], [4]], [[-6], [1]]], np.int32))
    with pytest.raises(IndexError) as info:
        lib.to_numpy(og.gather_elements(data, idx, axis=1))  # lazy libraries raise here
    assert str(info.value) == (
        "GatherElements-13: index -6 at position (1, 0, 0) of indices is out of range for "
        "axis 1 of size 5; valid indices are [-5, 4]"
    )


def test_reading_back_refuses_another_librarys_array(lib: Library) -> None:
    # Every "the result is the caller's library" claim of the suite rests on this check.
    foreign: Any = np.zeros(2, np.float32) if lib.name != "numpy" else [0.0, 0.0]
    with pytest.raises(NotOwnArray, match=rf"{re.escape(lib.name)}: expected its own array"):
        lib.to_numpy(foreign)


#: The libraries of this run that hold ONNX strings (NumPy's object arrays; Dask's).
STRING_LIBS = [lib for lib in LIBS if "string" in lib.holds]
#: Each call, given an object array holding ``bad``: its role in the call and position.
OBJECT_CALLS = {
    "gather data": (lambda x, b: og.gather(x(["a", b, "c"]), [0]), "data", r"\(1,\)"),
    "gather_nd data": (lambda x, b: og.gather_nd(x([["a", "b"], ["c", b]]), [[0]]), "data",
                       r"\(1, 1\)"),
    "scatter_elements updates": (
        lambda x, b: og.scatter_elements(x(["a", "b"]), [0, 1], x(["c", b])), "updates", r"\(1,\)"
    ),
    "tensor_scatter update": (
        lambda x, b: og.tensor_scatter(x([["a", "b"]]), x([[b]]), [0], axis=1), "updates",
        r"\(0, 0\)",
    ),
}  # fmt: skip


@pytest.mark.parametrize("holder", STRING_LIBS, ids=[lib.name for lib in STRING_LIBS])
@pytest.mark.parametrize("call", list(OBJECT_CALLS))
@pytest.mark.parametrize("bad", [None, 1.5, 3], ids=["None", "float", "int"])
def test_an_object_array_must_hold_strings(holder: Library, call: str, bad: Any) -> None:
    """Reliability round 5, item 10: an object array passed as ONNX strings whatever it
    held; an element that is not a str (or bytes) is a TypeError naming its type and place."""
    fn, role, where = OBJECT_CALLS[call]
    lib = holder

    def objects(values: Any) -> Any:
        return lib.asarray(np.array(values, dtype=object))

    kind = type(bad).__name__
    with pytest.raises(TypeError, match=f"{role} is an object array, read as ONNX strings, but "
                                        f"holds {kind} {bad!r} at position {where}"):  # fmt: skip
        lib.to_numpy(fn(objects, bad))
    got = fn(objects, "z")  # (the same call with text: the plan cached above serves it)
    assert lib.to_numpy(got).dtype == object
