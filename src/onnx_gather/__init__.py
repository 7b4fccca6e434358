"""ONNX-exact indexing operators on NumPy, PyTorch, JAX, Dask, CuPy and array-API arrays.

Gather, GatherElements, GatherND, ScatterElements, ScatterND, TensorScatter and the
deprecated Scatter, exactly as ONNX defines them, on whatever array library the caller uses:

>>> import numpy as np
>>> import onnx_gather as og
>>> og.gather(np.array([10.0, 20.0, 30.0]), [2, -3])
array([30., 10.])

Importing this package imports NumPy and array-api-compat only; a library's backend is
loaded the first time one of its arrays is passed in.
"""

from __future__ import annotations

from typing import Any

from onnx_gather import _ops
from onnx_gather._api import run
from onnx_gather._nodes import reference_ops, run_node
from onnx_gather._version import __version__

__all__ = [
    "__version__",
    "gather",
    "gather_elements",
    "gather_nd",
    "reference_ops",
    "run_node",
    "scatter",
    "scatter_elements",
    "scatter_nd",
    "tensor_scatter",
]


def gather(
    data: Any, indices: Any, /, axis: int = 0, *, opset: int = 13, check_bounds: bool = True
) -> Any:
    """ONNX ``Gather``: take slices of ``data`` along ``axis`` at ``indices``.

    ``out[i_0, ..., i_{a-1}, j_0, ..., j_{q-1}, k_{a+1}, ...] =
    data[i_0, ..., i_{a-1}, indices[j_0, ..., j_{q-1}], k_{a+1}, ...]``.

    Parameters
    ----------
    data : array
        A NumPy, PyTorch, JAX, Dask or CuPy array, or an array of any array-API library,
        of rank >= 1 and an ONNX data type (bfloat16 from version 13; strings where the
        library has them).
    indices : array, int or sequence of ints
        int32 or int64 indices of any rank: an array of ``data``'s library, a NumPy array,
        or a Python int or (nested) sequence, placed on ``data``'s device.
    axis : int, optional
        The axis to gather along, in ``[-r, r-1]``. Default 0.
    opset : int, optional
        The model's opset import. Gather-1 serves opsets 1-10, Gather-11 serves 11 and 12,
        Gather-13 serves 13 and newer. Default 13.
    check_bounds : bool, optional
        Raise IndexError for an index outside ``[-s, s-1]``, where ``s = data.shape[axis]``;
        negative indices count from the end in every version, Gather-1 included (as ONNX
        Runtime and the ONNX reference evaluator run it; torch's exporter writes such
        indices at opset 9). With False the check is skipped for speed and an
        out-of-range index gives an unspecified result (never a crash). Default True.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device, with shape
        ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``. It never aliases an
        input, and the inputs are never modified.

    Raises
    ------
    IndexError
        An index is out of range; the message names the operator, the value, its position
        in ``indices``, the axis and its size.
    TypeError
        ``indices`` is not int32/int64, ``data``'s type is not allowed in this version, or
        ``indices`` belongs to a different array library than ``data``.
    ValueError
        ``opset`` is below 1, ``axis`` is out of range, or ``data`` is 0-d.

    See Also
    --------
    gather_elements : One element per index, along one axis.
    gather_nd : Index tuples that address the leading dims of ``data``.
    onnx_gather.openvino.gather : OpenVINO's Gather-7/8 (zeros for a bad index).
    numpy.take, torch.index_select, jax.numpy.take : The closest native calls.

    Notes
    -----
    Gradients flow to ``data`` (PyTorch autograd and ``torch.func``, ``jax.grad``): the
    scatter-add of the upstream gradient at the gathered positions.

    Under tracing, index values given as arrays are unknown while the program is built
    (ints, sequences and NumPy arrays are known, and are checked then). An out-of-range
    index never reads another element:

    - ``torch.compile`` and ``torch.func``: the check runs inside the graph, when it runs,
      and raises the same IndexError (one host synchronisation, as eagerly). Under
      ``torch.compile`` pass indices as tensors.
    - ``jax.jit``, ``jax.vmap``: nothing can raise. The result holds the fill value (NaN,
      the most negative signed integer, the largest unsigned one, True) where the index is
      bad, and :func:`jax.experimental.checkify.checkify` reports the IndexError's text.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_gather as og
    >>> og.gather(np.array([10, 20, 30]), [-1, 0])
    array([30, 10])
    """
    return run(_ops.GATHER, opset, (data, indices), (axis,), check_bounds)


def gather_elements(
    data: Any, indices: Any, /, axis: int = 0, *, opset: int = 13, check_bounds: bool = True
) -> Any:
    """ONNX ``GatherElements``: pick one element of ``data`` along ``axis`` per index.

    For rank 3 and ``axis=1``: ``out[i][j][k] = data[i][indices[i][j][k]][k]``.

    Parameters
    ----------
    data : array
        A NumPy, PyTorch, JAX, Dask or CuPy array, or an array of any array-API library,
        of rank >= 1 and an ONNX data type (bfloat16 from version 13).
    indices : array or sequence of ints
        int32 or int64 indices of the same rank as ``data``. Off ``axis`` each dimension
        must be at most ``data``'s; along ``axis`` any length. No broadcasting.
    axis : int, optional
        The axis to gather along, in ``[-r, r-1]``. Default 0.
    opset : int, optional
        The model's opset import: GatherElements-11 serves opsets 11 and 12, -13 serves 13
        and newer. Below 11 is a ValueError. Default 13.
    check_bounds : bool, optional
        Raise IndexError for an index outside ``[-s, s-1]``, ``s = data.shape[axis]``.
        Default True.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device, with exactly ``indices``' shape.

    Raises
    ------
    IndexError
        An index is out of range; the message names the operator, the value, its position
        in ``indices``, the axis and its size.
    TypeError
        Disallowed index or data type, or ``indices`` from another array library.
    ValueError
        ``opset`` below 11, ``axis`` out of range, 0-d ``data``, ranks that differ, or an
        indices dimension off the axis larger than ``data``'s.

    See Also
    --------
    gather : Whole slices along ``axis``, one per index.
    scatter_elements : The inverse: write each update where its index says.
    onnx_gather.openvino.gather_elements : OpenVINO's GatherElements-6.
    numpy.take_along_axis, torch.gather, jax.numpy.take_along_axis : The closest
        native calls (they broadcast indices; torch.gather refuses negatives).

    Notes
    -----
    Gradients, tracing and the out-of-range policy under tracing: as for :func:`gather`.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_gather as og
    >>> og.gather_elements(np.array([[1, 2], [3, 4]]), [[0, 0], [1, 0]], axis=1)
    array([[1, 1],
           [4, 3]])
    """
    return run(_ops.GATHER_ELEMENTS, opset, (data, indices), (axis,), check_bounds)


def gather_nd(
    data: Any, indices: Any, /, batch_dims: int = 0, *, opset: int = 13, check_bounds: bool = True
) -> Any:
    """ONNX ``GatherND``: the slices of ``data`` that index tuples address.

    The last dim of ``indices`` holds ``k`` coordinates into the data dims after the first
    ``b = batch_dims``, which data and indices share: ``out[batch, j..., rest...] =
    data[batch, indices[batch, j..., 0], ..., indices[batch, j..., k-1], rest...]``.

    Parameters
    ----------
    data : array
        A NumPy, PyTorch, JAX, Dask or CuPy array, or an array of any array-API library,
        of rank ``r >= 1`` and an ONNX data type (bfloat16 from version 13; strings where
        the library has them).
    indices : array or sequence of ints
        int32 or int64 indices of rank ``q >= 1``: an array of ``data``'s library, a NumPy
        array, or a (nested) sequence of ints. ``indices.shape[-1]`` is ``k``, in
        ``[1, r - b]``; the first ``b`` dims equal data's.
    batch_dims : int, optional
        The number of leading batch dims ``b``, in ``[0, min(q, r))``. Version 11 has none:
        a non-zero value is a ValueError there. Default 0.
    opset : int, optional
        The model's opset import: GatherND-11 serves opset 11, -12 serves 12, -13 serves
        13 and newer. Below 11 is a ValueError. Default 13.
    check_bounds : bool, optional
        Raise IndexError for a coordinate outside ``[-s, s-1]``, where ``s`` is the size
        of the data axis it addresses (coordinate ``j``: axis ``b + j``); negative
        coordinates count from the end. With False the check is skipped for speed and an
        out-of-range coordinate gives an unspecified result (never a crash, never a read
        outside ``data``). Default True.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device, with shape ``indices.shape[:-1] +
        data.shape[b + k:]``. It never aliases an input, and the inputs are never
        modified.

    Raises
    ------
    IndexError
        A coordinate is out of range; the message names the operator, the value, its
        position in ``indices`` (its last entry: which coordinate), the axis it addresses
        and that axis' size.
    TypeError
        ``indices`` is not int32/int64, ``data``'s type is not allowed in this version,
        ``batch_dims`` is not an int, or ``indices`` belongs to another array library.
    ValueError
        ``opset`` below 11; 0-d ``data`` or ``indices``; ``batch_dims`` non-zero before
        version 12, negative, or not below both ranks; batch dims that differ; or
        ``indices.shape[-1]`` outside ``[1, r - b]``.

    See Also
    --------
    gather : Slices along one axis.
    scatter_nd : The inverse: write updates at index tuples.
    onnx_gather.openvino.gather_nd : OpenVINO's GatherND-5/8.
    numpy.ndarray.__getitem__ : Advanced indexing, ``data[tuple(indices.T)]``.

    Notes
    -----
    Gradients flow to ``data``: the scatter-add of the upstream gradient at the gathered
    slices (repeated index tuples accumulate). Tracing and the out-of-range policy under
    tracing: as for :func:`gather`.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_gather as og
    >>> og.gather_nd(np.array([[0, 1], [2, 3]]), [[0, 0], [1, -1]])
    array([0, 3])
    >>> og.gather_nd(np.arange(8).reshape(2, 2, 2), [[1], [0]], batch_dims=1)
    array([[2, 3],
           [4, 5]])
    """
    return run(_ops.GATHER_ND, opset, (data, indices), (batch_dims,), check_bounds)


_SCATTER_NOTES = """The result starts as a copy of ``data`` (or is ``out``); each update is
    combined with the element it lands on by ``reduction``, one update at a time in C order
    of its position in ``indices``, in ``data``'s dtype:

    - ``"none"``: the update replaces the element; of several updates that land on one
      element, the last in that order wins (on every backend and device);
    - ``"add"``, ``"mul"``: rounded after every update (float16 and bfloat16 too);
      integers wrap around; bool: add is OR, mul is AND; a NaN result is the canonical
      quiet NaN;
    - ``"max"``, ``"min"``: IEEE 754-2019 maximum/minimum (a NaN wins: the first one in
      that order; -0.0 < +0.0); bool: OR / AND; complex data has no max/min (TypeError).

    Strings take ``"none"`` only.
"""


def scatter_elements(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    axis: int = 0,
    *,
    reduction: str = "none",
    opset: int = 18,
    check_bounds: bool = True,
    out: Any = None,
) -> Any:
    """ONNX ``ScatterElements``: write each update where GatherElements would read it.

    For rank 2 and ``axis=1``: ``out[i][indices[i][j]] = f(out[i][indices[i][j]],
    updates[i][j])`` for every ``(i, j)`` in C order, ``f`` the reduction.

    Parameters
    ----------
    data : array
        A NumPy, PyTorch, JAX, Dask or CuPy array, or an array of any array-API library,
        of rank >= 1 and an ONNX data type (bfloat16 from version 13; strings where the
        library has them).
    indices : array or sequence of ints
        int32 or int64 indices of ``data``'s rank; off ``axis`` each dimension at most
        ``data``'s, along ``axis`` any length. An array of ``data``'s library, a NumPy
        array, or a (nested) sequence of ints.
    updates : array
        An array of ``data``'s library and dtype, of ``indices``' shape.
    axis : int, optional
        The axis the indices address, in ``[-r, r-1]``. Default 0.
    reduction : {"none", "add", "mul", "max", "min"}, optional
        How an update combines with the element it lands on (see Notes). ``add`` and
        ``mul`` need version 16; ``max`` and ``min`` too (the spec adds them in 18, but
        exporters write them at 16 and ONNX Runtime runs them there). Default ``"none"``.
    opset : int, optional
        The model's opset import: ScatterElements-11 serves opsets 11 and 12, -13 serves
        13-15, -16 serves 16 and 17, -18 serves 18 and newer. Below 11 is a ValueError.
        Default 18.
    check_bounds : bool, optional
        Raise IndexError for an index outside ``[-s, s-1]``, ``s = data.shape[axis]``
        (every index is checked before anything is written, also with ``out=``). With
        False the check is skipped and an out-of-range update is dropped: it writes
        nothing, on every backend. Default True.
    out : array, optional
        The array that receives the result: of ``data``'s library, shape and dtype, and
        writable. ``out=data`` updates ``data`` in place and writes only the targets (the
        cheap way to update a cache). JAX arrays are immutable: there ``out=`` is a
        TypeError (use ``jax.jit(..., donate_argnums=0)``); so are Dask's.

    Returns
    -------
    array
        Of ``data``'s library, dtype, device and shape: ``out`` where given, else a new
        array that aliases no input (the inputs are never modified).

    Raises
    ------
    IndexError
        An index is out of range; the message names the operator, the value, its position
        in ``indices``, the axis and its size.
    TypeError
        Disallowed index or data type; ``updates`` of another dtype or library than
        ``data``; ``reduction`` not a str, ``max``/``min`` on complex data or a reduction
        of strings; an unsuitable ``out``.
    ValueError
        ``opset`` below 11, an unknown reduction or one the version lacks, ``axis`` out of
        range, 0-d ``data``, ranks that differ, ``updates`` of another shape than
        ``indices``, or an indices dimension off the axis larger than ``data``'s.

    See Also
    --------
    gather_elements : The matching gather.
    scatter_nd : Updates at index tuples.
    scatter : The deprecated Scatter-9/11, the same rule.
    onnx_gather.openvino.scatter_elements_update : OpenVINO's version.
    numpy.put_along_axis, torch.Tensor.scatter, torch.Tensor.scatter_reduce : The
        closest native calls (JAX: ``x.at[...].set``).

    Notes
    -----
    {notes}
    Gradients flow to ``data`` and ``updates`` (PyTorch autograd and ``torch.func``,
    ``jax.grad``): ``none`` sends each element's gradient to its winning update, or to
    ``data`` where nothing was written; ``add`` to both; ``mul``, ``max`` and ``min`` as
    ``torch.scatter_reduce`` defines them. Under ``jax.jit`` nothing can raise: an
    out-of-range update is dropped, and :func:`jax.experimental.checkify.checkify`
    reports the IndexError's text.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_gather as og
    >>> og.scatter_elements(np.zeros(3), [2, 0, 2], np.array([1.0, 2.0, 3.0]))
    array([2., 0., 3.])
    >>> og.scatter_elements(np.zeros(3), [2, 0, 2], np.array([1.0, 2.0, 3.0]),
    ...                     reduction="add")
    array([2., 0., 4.])
    """
    return run(
        _ops.SCATTER_ELEMENTS,
        opset,
        (data, indices, updates),
        (axis, reduction),
        check_bounds,
        out,
    )


def scatter_nd(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    *,
    reduction: str = "none",
    opset: int = 18,
    check_bounds: bool = True,
    out: Any = None,
) -> Any:
    """ONNX ``ScatterND``: write slices of ``data`` that index tuples address.

    The last dim of ``indices`` holds ``k`` coordinates into ``data``'s first ``k`` dims:
    for every index tuple ``t = indices[j...]`` in C order, ``out[t[0], ..., t[k-1],
    rest...] = f(out[t[0], ..., t[k-1], rest...], updates[j..., rest...])``, ``f`` the
    reduction.

    Parameters
    ----------
    data : array
        A NumPy, PyTorch, JAX, Dask or CuPy array, or an array of any array-API library,
        of rank ``r >= 1`` and an ONNX data type (bfloat16 from version 13; strings where
        the library has them).
    indices : array or sequence of ints
        int32 or int64 indices of rank ``q >= 1``; ``k = indices.shape[-1]`` in ``[0, r]``
        (``k = 0``: every update is the whole of ``data``, as ONNX Runtime runs it).
    updates : array
        An array of ``data``'s library and dtype, of shape ``indices.shape[:-1] +
        data.shape[k:]``.
    reduction : {"none", "add", "mul", "max", "min"}, optional
        As for :func:`scatter_elements`. Default ``"none"``.
    opset : int, optional
        The model's opset import, as for :func:`scatter_elements`. Default 18.
    check_bounds : bool, optional
        Raise IndexError for a coordinate outside ``[-s, s-1]``, ``s`` the size of the
        data axis it addresses (coordinate ``j``: axis ``j``). With False an index tuple
        with a coordinate out of range is dropped: its slice writes nothing. Default True.
    out : array, optional
        As for :func:`scatter_elements`: ``out=cache`` writes one new position of a
        key/value cache in place.

    Returns
    -------
    array
        Of ``data``'s library, dtype, device and shape: ``out`` where given, else a new
        array that aliases no input.

    Raises
    ------
    IndexError
        A coordinate is out of range; the message names the operator, the value, its
        position in ``indices`` (its last entry: which coordinate), the axis it addresses
        and that axis' size.
    TypeError
        As for :func:`scatter_elements`.
    ValueError
        ``opset`` below 11, an unknown reduction or one the version lacks, 0-d ``data`` or
        ``indices``, ``indices.shape[-1]`` above ``r``, or ``updates`` of the wrong
        shape.

    See Also
    --------
    gather_nd : The matching gather.
    scatter_elements : One update per index, along one axis.
    tensor_scatter : A key/value cache write, per batch entry.
    onnx_gather.openvino.scatter_nd_update : OpenVINO's ScatterNDUpdate-3/15.
    torch.Tensor.index_put_ : The closest native call (NumPy: ``data[tuple(indices.T)] =
        updates``; JAX: ``x.at[...].set``).

    Notes
    -----
    {notes}
    Gradients and tracing: as for :func:`scatter_elements` (to ``updates``: GatherND of
    the upstream gradient at each tuple that wins or contributes).

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_gather as og
    >>> cache = np.zeros((2, 4, 3), np.float32)
    >>> new = np.ones((2, 3), np.float32)
    >>> _ = og.scatter_nd(cache, [[0, 1], [1, 1]], new, out=cache)
    >>> cache[:, 1]
    array([[1., 1., 1.],
           [1., 1., 1.]], dtype=float32)
    >>> og.scatter_nd(np.zeros(4, np.int64), [[1], [1], [3]], np.array([5, 6, 7]),
    ...               reduction="add")
    array([ 0, 11,  0,  7])
    """
    return run(_ops.SCATTER_ND, opset, (data, indices, updates), (reduction,), check_bounds, out)


def scatter(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    axis: int = 0,
    *,
    opset: int = 11,
    check_bounds: bool = True,
    out: Any = None,
) -> Any:
    """ONNX ``Scatter`` (9 and 11, deprecated): :func:`scatter_elements` under its old name.

    Old models carry it; ONNX deprecated it in opset 11 for ScatterElements, which does the
    same. For rank 2 and ``axis=1``: ``out[i][indices[i][j]] = updates[i][j]`` for every
    ``(i, j)`` in C order: of several updates that land on one element, the last wins.

    Parameters
    ----------
    data : array
        As for :func:`scatter_elements`; no version has bfloat16.
    indices : array or sequence of ints
        As for :func:`scatter_elements`. Negative indices count from the end in both
        versions (Scatter-9's text gives no range; ONNX Runtime counts them, as for
        Gather-1).
    updates : array
        An array of ``data``'s library and dtype, of ``indices``' shape.
    axis : int, optional
        The axis the indices address, in ``[-r, r-1]``. Default 0.
    opset : int, optional
        The model's opset import: Scatter-9 serves opsets 9 and 10, Scatter-11 serves 11
        and newer. Below 9 is a ValueError. Default 11.
    check_bounds : bool, optional
        As for :func:`scatter_elements`: an index outside ``[-s, s-1]`` is an IndexError
        (checked before anything is written); with False its update is dropped.
    out : array, optional
        As for :func:`scatter_elements` (``out=data`` updates ``data`` in place).

    Returns
    -------
    array
        Of ``data``'s library, dtype, device and shape: ``out`` where given, else a new
        array that aliases no input.

    Raises
    ------
    IndexError, TypeError, ValueError
        As for :func:`scatter_elements` (bfloat16 data is a TypeError at every version).

    See Also
    --------
    scatter_elements : The operator that replaced Scatter in opset 11.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_gather as og
    >>> og.scatter(np.zeros((1, 5)), [[1, 3]], np.array([[1.1, 2.1]]), axis=1,
    ...            opset=9)
    array([[0. , 1.1, 0. , 2.1, 0. ]])
    >>> og.scatter(np.zeros(3), [2, -3, 2], np.array([1.0, 2.0, 3.0]))
    array([2., 0., 3.])
    """
    return run(_ops.SCATTER, opset, (data, indices, updates), (axis,), check_bounds, out)


def tensor_scatter(
    past_cache: Any,
    update: Any,
    write_indices: Any = None,
    /,
    *,
    axis: int = -2,
    mode: str = "linear",
    opset: int = 24,
    check_bounds: bool = True,
    out: Any = None,
) -> Any:
    """ONNX ``TensorScatter`` (24): write each batch entry's update into a cache at its index.

    The KV-cache write of LLM exports. For each batch entry ``b`` (axis 0) and each
    position ``s`` of the update along ``axis``: ``present[b, ..., write_indices[b] + s,
    ...] = update[b, ..., s, ...]``; in ``"circular"`` mode the position is taken modulo
    the cache's length along ``axis``. Every other element is the cache's.

    Parameters
    ----------
    past_cache : array
        The cache, ``(batch, D1, ..., max_sequence_length, ..., Dn)``: any library and
        ONNX type the other operators take (bfloat16 included).
    update : array
        Of ``past_cache``'s library, dtype and shape, except along ``axis``, where it may be
        shorter (``sequence_length <= max_sequence_length``).
    write_indices : array or sequence of ints, optional
        int64 (or int32) of shape ``(batch,)``: where each entry's update starts along
        ``axis``. An array of the cache's library, a NumPy array or a sequence. None (the
        default, as an ONNX node that leaves it out): zeros.
    axis : int, optional
        The sequence axis, in ``[-r, r-1]``; never the batch axis 0. Default -2.
    mode : {"linear", "circular"}, optional
        ``"circular"`` wraps the position around the cache's length (only the sequence
        position wraps, as ONNX Runtime's kernel does; the ONNX reference evaluator also
        wraps the other coordinates, which we do not follow). Default ``"linear"``.
    opset : int, optional
        The model's opset import: 24 and newer. Below 24 is a ValueError. Default 24.
    check_bounds : bool, optional
        Raise IndexError for a negative write index or, in linear mode, one with
        ``write_indices[b] + update.shape[axis] > past_cache.shape[axis]`` (checked before
        anything is written, also with ``out=``); the message names the batch entry, the
        index and the sizes, as ONNX Runtime's does. With False, the writes whose
        position ``write_indices[b] + s`` falls outside the cache are dropped (in linear
        mode index -1 with an update of length 2 still writes position 0; in circular
        mode every write of a negative index is dropped). Default True.
    out : array, optional
        The array that receives the result: of the cache's library, shape and dtype.
        ``out=past_cache`` updates the cache in place and writes only the new positions:
        the point of the operator (ONNX Runtime works in place too). JAX and Dask arrays
        are immutable: there ``out=`` is a TypeError (JAX: use ``jax.jit(...,
        donate_argnums=0)``).

    Returns
    -------
    array
        The present cache, of ``past_cache``'s library, dtype, device and shape: ``out``
        where given, else a new array that aliases no input.

    Raises
    ------
    IndexError
        A write index out of range (see ``check_bounds``).
    TypeError
        A data type the library cannot hold; ``update`` of another dtype or library;
        write indices that are not int32 or int64; ``mode`` not a str; an unsuitable
        ``out``.
    ValueError
        ``opset`` below 24, ``axis`` out of range or 0, an unknown ``mode``, a cache of
        rank < 2, an ``update`` of another rank, other dims off the axis or longer along
        it, ``write_indices`` of another shape than ``(batch,)``.

    See Also
    --------
    scatter_nd : Updates at any index tuples.
    torch.Tensor.index_copy_ : The closest native call (NumPy: slice assignment;
        JAX: ``jax.lax.dynamic_update_slice``).

    Notes
    -----
    The positions of one batch entry are distinct (the update is no longer than the
    cache), so no two writes meet and no order decides anything. Under ``jax.jit``
    nothing can raise: an out-of-range write is dropped. Under ``torch.compile`` the check
    runs in the graph; an out-of-range index raises torch's index error there, before
    anything is written.

    Examples
    --------
    >>> import numpy as np
    >>> import onnx_gather as og
    >>> cache = np.zeros((2, 1, 4, 2), np.float32)
    >>> new = np.ones((2, 1, 1, 2), np.float32)
    >>> _ = og.tensor_scatter(cache, new, np.array([3, 1]), out=cache)
    >>> cache[:, 0, :, 0]
    array([[0., 0., 0., 1.],
           [0., 1., 0., 0.]], dtype=float32)
    >>> og.tensor_scatter(np.zeros((1, 3)), np.array([[7.0, 8.0]]), [2], axis=1,
    ...                   mode="circular")
    array([[8., 0., 7.]])
    """
    if write_indices is None:  # (a Python list: a constant under torch.compile too)
        shape: Any = getattr(past_cache, "shape", ())
        write_indices = [0] * (int(shape[0]) if len(shape) else 0)
    return run(
        _ops.TENSOR_SCATTER,
        opset,
        (past_cache, update, write_indices),
        (axis, mode),
        check_bounds,
        out,
    )


scatter_elements.__doc__ = (scatter_elements.__doc__ or "").replace("{notes}", _SCATTER_NOTES)
scatter_nd.__doc__ = (scatter_nd.__doc__ or "").replace("{notes}", _SCATTER_NOTES)
