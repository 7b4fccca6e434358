"""OpenVINO operators whose semantics differ from ONNX's."""

from __future__ import annotations

from typing import Any

from onnx_gather import _ops
from onnx_gather._api import run

__all__ = [
    "gather",
    "gather_elements",
    "gather_nd",
    "scatter_elements_update",
    "scatter_nd_update",
    "scatter_update",
]


def gather(data: Any, indices: Any, /, axis: int, *, batch_dims: int = 0, version: int = 8) -> Any:
    """OpenVINO ``Gather-7`` and ``Gather-8``.

    Slices of ``data`` along ``axis`` at ``indices``, per batch:
    ``out[p_0, ..., p_{axis-1}, i_b, ..., i_{M-1}, p_{axis+1}, ...] = data[p_0, ...,
    p_{axis-1}, indices[p_0, ..., p_{b-1}, i_b, ..., i_{M-1}], p_{axis+1}, ...]`` with
    ``b = batch_dims``: the first ``b`` dims of data and indices are batches, and each
    batch reads only its own data. The output's shape is ``data.shape[:axis] +
    indices.shape[b:] + data.shape[axis+1:]``.

    Gather-8 takes indices in ``[-s, s-1]`` (``s = data.shape[axis]``), negative ones
    counting from the end; Gather-7 in ``[0, s-1]``. Any other index gives zeros in its
    place (empty strings for strings): the operator defines that value (Gather-8's text,
    its Example 7; OpenVINO's runtime reads Gather-7's negatives so too), so it is never
    an error, and there is no ``check_bounds``.

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 indices, any shape (0-d too).
    axis : int
        The axis to gather along, in ``[-r, r-1]``.
    batch_dims : int, optional
        Leading dims that data and indices share, in ``[-q, q]`` for indices of rank ``q``
        (negative: counted from ``q``), at most ``axis`` once both are normalised.
        Default 0.
    version : int, optional
        The OpenVINO opset: 7 runs Gather-7, 8 and later Gather-8. Default 8.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device.

    Raises
    ------
    TypeError
        Disallowed index type, or ``indices`` from another array library.
    ValueError
        0-d data, ``axis`` or ``batch_dims`` out of range, ``batch_dims`` above ``axis``,
        batch dims of data and indices that differ, or a ``version`` older than 7.

    See Also
    --------
    onnx_gather.gather : ONNX Gather, which raises for a bad index.
    gather_nd : OpenVINO's GatherND-5/8.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> openvino.gather(np.array([1, 2, 3, 4, 5]), [3, 10, -20, -1], axis=0)
    array([4, 0, 0, 5])
    >>> openvino.gather(np.array([1, 2, 3, 4, 5]), [3, -1], axis=0, version=7)
    array([4, 0])
    >>> data = np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]])
    >>> openvino.gather(data, [[0, 0, 4], [4, 0, 0]], axis=1, batch_dims=1)
    array([[ 1,  1,  5],
           [10,  6,  6]])
    """
    return run(_ops.OPENVINO_GATHER, version, (data, indices), (axis, batch_dims), False)


def gather_elements(data: Any, indices: Any, /, axis: int, *, check_bounds: bool = True) -> Any:
    """OpenVINO ``GatherElements-6``.

    Like ONNX GatherElements, with OpenVINO's stricter rules: ``axis`` is required, and off
    the axis the indices' dimensions must equal ``data``'s. Indices lie in ``[-s, s-1]``,
    negative ones counting from the end, as OpenVINO's CPU runtime reads them since
    openvinotoolkit/openvino#30800 (the 2020 operator text said ``[0, s-1]``).

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 indices, same rank as ``data``.
    axis : int
        The axis to gather along, in ``[-r, r-1]``.
    check_bounds : bool, optional
        Raise IndexError for an index outside ``[-s, s-1]``, ``s = data.shape[axis]``.
        Default True.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device, with ``indices``' shape.

    Raises
    ------
    IndexError
        An index is ``< -s`` or ``>= s``; the message names the operator, the value, its
        position, the axis and its size.
    TypeError
        Disallowed index type, or ``indices`` from another array library.
    ValueError
        ``axis`` out of range, 0-d ``data``, ranks that differ, or an off-axis dimension
        that differs from ``data``'s.

    See Also
    --------
    onnx_gather.gather_elements : ONNX GatherElements (indices may be smaller
        off the axis).
    scatter_elements_update : The matching scatter.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> data = np.array([[1, 7], [4, 3]])
    >>> openvino.gather_elements(data, [[1, 1, 0], [1, 0, 1]], axis=1)
    array([[7, 7, 1],
           [3, 4, 3]])
    >>> openvino.gather_elements(np.array([[10, 11, 12, 13]]), [[-1, -4]],
    ...                          axis=1)
    array([[13, 10]])
    """
    return run(_ops.OPENVINO_GATHER_ELEMENTS, None, (data, indices), (axis,), check_bounds)


def gather_nd(
    data: Any, indices: Any, /, *, batch_dims: int = 0, version: int = 8, check_bounds: bool = True
) -> Any:
    """OpenVINO ``GatherND-5`` and ``GatherND-8``.

    ONNX GatherND's values: each index tuple of ``indices``' last dim reads a slice of
    ``data`` after its ``batch_dims`` leading dims, which data and indices share. Negative
    coordinates count from the end in both versions, as OpenVINO's CPU runtime reads them
    (the texts say ``[-s, s-1]`` for version 8, nothing for version 5). The versions differ
    in the output's shape when ``batch_dims > 0``: version 8 keeps the batch dims,
    ``indices.shape[:-1] + data.shape[batch_dims + k:]``; version 5 flattens them into
    one of their product.

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 index tuples: the last dim holds ``k`` coordinates, ``k`` in
        ``[1, rank(data) - batch_dims]``.
    batch_dims : int, optional
        Leading dims that data and indices share, in ``[0, min(rank(data), rank(indices)))``.
        Default 0.
    version : int, optional
        The OpenVINO opset: 5 to 7 run GatherND-5, 8 and later GatherND-8. Default 8.
    check_bounds : bool, optional
        Raise IndexError for a coordinate outside ``[-s, s-1]`` of the axis it addresses.
        Default True.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device.

    Raises
    ------
    IndexError
        A coordinate is out of range; the message names the operator, the value, its
        position, the axis and its size.
    TypeError
        Disallowed index type, or ``indices`` from another array library.
    ValueError
        0-d data or indices, ``batch_dims`` out of range, batch dims of data and indices
        that differ (OpenVINO's runtime refuses them too), ``k`` out of range, or a
        ``version`` older than 5.

    See Also
    --------
    onnx_gather.gather_nd : ONNX GatherND.
    scatter_nd_update : The matching scatter.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> data = np.arange(1, 25).reshape(2, 3, 4)
    >>> openvino.gather_nd(data, [[1], [0]], batch_dims=1)
    array([[ 5,  6,  7,  8],
           [13, 14, 15, 16]])
    >>> openvino.gather_nd(data, [[0, -1], [2, 0]], batch_dims=1)
    array([ 4, 21])
    >>> openvino.gather_nd(data.reshape(2, 3, 4, 1),
    ...                    [[[1], [0], [2]], [[0], [2], [2]]], batch_dims=2,
    ...                    version=5)
    array([[ 2],
           [ 5],
           [11],
           [13],
           [19],
           [23]])
    """
    return run(_ops.OPENVINO_GATHER_ND, version, (data, indices), (batch_dims,), check_bounds)


def scatter_update(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    axis: int,
    *,
    check_bounds: bool = True,
    out: Any = None,
) -> Any:
    """OpenVINO ``ScatterUpdate-3``.

    A copy of ``data`` with slices along ``axis`` replaced:
    ``out[p, indices[i], q] = updates[p, i, q]`` for every position ``i`` of ``indices``
    (any rank), ``p`` of ``data.shape[:axis]`` and ``q`` of ``data.shape[axis+1:]``, so
    ``updates.shape == data.shape[:axis] + indices.shape + data.shape[axis+1:]``. Indices
    lie in ``[0, s-1]``, ``s = data.shape[axis]``: a negative one is an error too, as the
    text and OpenVINO's runtime say. Where several indices are equal, the last in C order
    wins (the text leaves the order undefined).

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 indices, any shape (0-d too).
    updates : array
        Of data's library and dtype, of the shape above.
    axis : int
        The axis to write along, in ``[-r, r-1]``.
    check_bounds : bool, optional
        Raise IndexError for an index outside ``[0, s-1]``; without the check such an
        index writes nothing. Default True.
    out : array, optional
        Receives the result (data's library, shape and dtype); ``out=data`` updates data
        in place. Default: a new array.

    Returns
    -------
    array
        Of ``data``'s library, dtype, shape and device (``out`` where given).

    Raises
    ------
    IndexError
        An index is negative or ``>= s``; the message names the operator, the value, its
        position, the axis and its size.
    TypeError
        Disallowed index type, updates of another dtype, arrays of another library.
    ValueError
        0-d data, ``axis`` out of range, updates of another shape.

    See Also
    --------
    scatter_elements_update, scatter_nd_update : OpenVINO's other scatters.
    onnx_gather.scatter_elements : The ONNX scatter closest to it.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> data = np.array([[-1.0, 1.0, -1.0, 3.0, 4.0], [-1.0, 6.0, -1.0, 8.0, 9.0],
    ...                  [-1.0, 11.0, 1.0, 13.0, 14.0]], dtype=np.float32)
    >>> updates = np.array([[1, 1], [1, 1], [1, 2]], np.float32)
    >>> openvino.scatter_update(data, [0, 2], updates, axis=1)
    array([[ 1.,  1.,  1.,  3.,  4.],
           [ 1.,  6.,  1.,  8.,  9.],
           [ 1., 11.,  2., 13., 14.]], dtype=float32)
    """
    return run(
        _ops.OPENVINO_SCATTER_UPDATE, None, (data, indices, updates), (axis,), check_bounds, out
    )


def scatter_elements_update(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    axis: int,
    *,
    reduction: str = "none",
    use_init_val: bool = True,
    version: int = 12,
    check_bounds: bool = True,
    out: Any = None,
) -> Any:
    """OpenVINO ``ScatterElementsUpdate-3`` and ``ScatterElementsUpdate-12``.

    A copy of ``data`` where each update lands where ONNX ScatterElements would put it:
    for rank 2 and ``axis=1``, ``out[i][indices[i][j]] = f(out[i][indices[i][j]],
    updates[i][j])``, one update at a time in C order of ``(i, j)``, each step computed in
    data's dtype. Negative indices count from the end (in both versions, as OpenVINO's
    runtime reads them). ``f`` is the reduction:

    - ``"none"``: the update replaces the value (where indices repeat, the last wins);
    - ``"sum"``, ``"prod"``: add, multiply (integers wrap around; bool: OR, AND);
    - ``"min"``, ``"max"``: IEEE 754-2019 minimum and maximum (NaN wins, -0.0 < +0.0);
      bool: AND, OR;
    - ``"mean"``: the updates that land on an element (and its value, with
      ``use_init_val``) are added in that order, then divided once by their count;
      integers round down (toward -inf), floats to nearest. Not for bool or complex data.

    With ``use_init_val=False`` an element that an update lands on starts from the
    reduction's identity (0; 1 for prod; -inf or the type's smallest for max; +inf or its
    largest for min), not from data.

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 indices of data's rank; off the axis each dim <= data's.
    updates : array
        Of data's library and dtype, of the indices' shape.
    axis : int
        The axis to write along, in ``[-r, r-1]``.
    reduction : str, optional
        ``"none"``, ``"sum"``, ``"prod"``, ``"min"``, ``"max"`` or ``"mean"`` (version 12).
        Default ``"none"``.
    use_init_val : bool, optional
        Whether a touched element starts from data's value (version 12 may say False).
        Default True.
    version : int, optional
        The OpenVINO opset: 3 to 11 run ScatterElementsUpdate-3, 12 and later
        ScatterElementsUpdate-12. Default 12.
    check_bounds : bool, optional
        Raise IndexError for an index outside ``[-s, s-1]``; without the check such an
        index writes nothing. Default True.
    out : array, optional
        Receives the result; ``out=data`` updates data in place. Default: a new array.

    Returns
    -------
    array
        Of ``data``'s library, dtype, shape and device (``out`` where given).

    Raises
    ------
    IndexError
        An index is out of range; the message names the operator, the value, its position,
        the axis and its size.
    TypeError
        Disallowed index type, updates of another dtype, a reduction the data type cannot
        take (mean of bool or complex; min and max of complex; any but none of strings).
    ValueError
        ONNX ScatterElements' shape rules; an unknown reduction; a reduction or
        ``use_init_val=False`` at version 3.

    See Also
    --------
    onnx_gather.scatter_elements : ONNX ScatterElements.
    gather_elements : The matching gather.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> data = np.array([2, 3, 4, 6], np.float32)
    >>> updates = np.array([10, 20, 30, 40, 70, 60], np.float32)
    >>> openvino.scatter_elements_update(data, [1, 0, 0, -2, -1, 2], updates,
    ...                                  axis=0, reduction="sum")
    array([ 52.,  13., 104.,  76.], dtype=float32)
    >>> openvino.scatter_elements_update(data, [1, 0, 0, 2, 3, 2], updates,
    ...                                  axis=0, reduction="sum",
    ...                                  use_init_val=False)
    array([ 50.,  10., 100.,  70.], dtype=float32)
    >>> openvino.scatter_elements_update(np.array([7, 7]), [0, 0, 1],
    ...                                  np.array([1, 2, -10]), axis=0,
    ...                                  reduction="mean")
    array([ 3, -2])
    """
    return run(
        _ops.OPENVINO_SCATTER_ELEMENTS_UPDATE,
        version,
        (data, indices, updates),
        (axis, reduction, use_init_val),
        check_bounds,
        out,
    )


def scatter_nd_update(
    data: Any,
    indices: Any,
    updates: Any,
    /,
    *,
    reduction: str = "none",
    version: int = 15,
    check_bounds: bool = True,
    out: Any = None,
) -> Any:
    """OpenVINO ``ScatterNDUpdate-3`` and ``ScatterNDUpdate-15``.

    A copy of ``data`` where each index tuple of ``indices``' last dim (``k`` coordinates)
    receives its slice of ``updates``, as ONNX ScatterND: ``out[indices[i]] =
    f(out[indices[i]], updates[i])`` for every ``i`` of ``indices.shape[:-1]`` in C order,
    each step computed in data's dtype; ``updates.shape == indices.shape[:-1] +
    data.shape[k:]``. Negative coordinates count from the end (in both versions, as
    OpenVINO's runtime reads them). ``f`` is the reduction: ``"none"`` (where tuples
    repeat, the last wins), ``"sum"``, ``"sub"`` (``out - update``), ``"prod"`` (integers
    wrap around; bool: OR, XOR, AND), ``"min"``, ``"max"`` (IEEE 754-2019; bool: AND, OR).

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 index tuples, rank >= 1, ``k = indices.shape[-1]`` in ``[1, r]``.
    updates : array
        Of data's library and dtype, of the shape above.
    reduction : str, optional
        ``"none"``, ``"sum"``, ``"sub"``, ``"prod"``, ``"min"`` or ``"max"`` (version 15).
        Default ``"none"``.
    version : int, optional
        The OpenVINO opset: 3 to 14 run ScatterNDUpdate-3, 15 and later ScatterNDUpdate-15.
        Default 15.
    check_bounds : bool, optional
        Raise IndexError for a coordinate outside ``[-s, s-1]`` of its axis; without the
        check such a tuple writes nothing. Default True.
    out : array, optional
        Receives the result; ``out=data`` updates data in place. Default: a new array.

    Returns
    -------
    array
        Of ``data``'s library, dtype, shape and device (``out`` where given).

    Raises
    ------
    IndexError
        A coordinate is out of range; the message names the operator, the value, its
        position, the axis and its size.
    TypeError
        Disallowed index type, updates of another dtype, a reduction the data type cannot
        take (min and max of complex; any but none of strings).
    ValueError
        ONNX ScatterND's shape rules; an unknown reduction; a reduction at version 3.

    See Also
    --------
    onnx_gather.scatter_nd : ONNX ScatterND.
    gather_nd : The matching gather.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> data = np.array([1, 2, 3, 4])
    >>> indices = [[0], [-3], [-3], [2], [0]]
    >>> updates = np.array([10, 30, 40, 20, 50])
    >>> openvino.scatter_nd_update(data, indices, updates)
    array([50, 40, 20,  4])
    >>> openvino.scatter_nd_update(data, indices, updates, reduction="sub")
    array([-59, -68, -17,   4])
    """
    return run(
        _ops.OPENVINO_SCATTER_ND_UPDATE, version, (data, indices, updates), (reduction,),
        check_bounds, out,
    )  # fmt: skip
