"""Triton kernels for torch tensors on CUDA: one pass per call, checked or not.

Imports torch and triton; ``_torch`` imports it lazily, for CUDA tensors only. Under
``TRITON_INTERPRET=1`` the same kernels run on CPU tensors (tests/test_torch_triton.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import triton
import triton.language as tl

from onnx_gather import _spec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from onnx_gather._spec import Plan
    from onnx_gather._typing import Array

#: Below this many output elements torch's own kernels (index_select, gather, plus the
#: aminmax check) win over Triton's launch cost. Taken from the H100 figures of issue 12
#: (docs/performance.md), not measured here.
MIN_OUTPUTS = 1 << 16

#: The most dims off the axis (after collapsing) the kernels take.
MAX_REST_DIMS = 4

BLOCK = 1024
INT64_MAX = (1 << 63) - 1

#: The type each element type moves as: same width, so the bits move unchanged.
BITS: dict[torch.dtype, torch.dtype] = {
    **dict.fromkeys((torch.bool, torch.uint8), torch.uint8),
    torch.int8: torch.int8,
    **dict.fromkeys((torch.int16, torch.uint16, torch.float16, torch.bfloat16), torch.int16),
    **dict.fromkeys((torch.int32, torch.uint32, torch.float32), torch.int32),
    **dict.fromkeys((torch.int64, torch.uint64, torch.float64, torch.complex64), torch.int64),
}
INDEX_TYPES = (torch.int32, torch.int64)


@triton.jit
def _rest_offset(r, D1, D2, D3, S0, S1, S2, S3, RANK: tl.constexpr):  # type: ignore[no-untyped-def]
    """The data offset of flat C-order position ``r`` over the dims off the axis.

    Those dims are the last RANK of (D0, D1, D2, D3) with strides (S0, S1, S2, S3).
    """
    off = r * 0
    if RANK == 1:
        off = r * S3
    if RANK == 2:
        off = (r % D3) * S3 + (r // D3) * S2
    if RANK == 3:
        off = (r % D3) * S3 + ((r // D3) % D2) * S2 + (r // D3 // D2) * S1
    if RANK == 4:
        q = r // D3 // D2
        off = (r % D3) * S3 + ((r // D3) % D2) * S2 + (q % D1) * S1 + (q // D1) * S0
    return off


@triton.jit
def _record_first_bad(bad_ptr, position, bad):  # type: ignore[no-untyped-def]
    """``atomic_min`` of the smallest ``position`` where ``bad``, in programs that have one."""
    first = tl.min(tl.where(bad, position, 9223372036854775807), axis=0)
    if first < 9223372036854775807:
        tl.atomic_min(bad_ptr, first)


@triton.jit
def _take(  # type: ignore[no-untyped-def]
    data_ptr, idx_ptr, out_ptr, bad_ptr, o, live, j, rest, size, axis_stride,
    CHECK: tl.constexpr,
):  # fmt: skip
    """Store at output ``o`` the data at offset ``rest`` plus index ``j`` along the axis.

    The part both kernels share once they know, per output element, which index it takes
    (``j``, its flat position in ``indices``) and where its row of data starts (``rest``).
    It counts a negative index from the end, checks the range (when ``CHECK``), replaces
    a bad index by 0 and reads nothing where the axis is empty (so no address outside
    ``data`` is ever formed into a load).
    """
    idx = tl.load(idx_ptr + j, mask=live, other=0).to(tl.int64)
    idx = tl.where(idx < 0, idx + size, idx)
    ok = (idx >= 0) & (idx < size)
    if CHECK:
        _record_first_bad(bad_ptr, j, live & ~ok)
    # Unchecked: an index out of range reads the element clamped into the axis (docs/semantics.md);
    # on an empty axis (size - 1 is -1) nothing may be read: zeros.
    idx = tl.minimum(tl.maximum(idx, 0), size - 1)
    value = tl.load(data_ptr + (rest + idx * axis_stride), mask=live & (idx >= 0), other=0)
    tl.store(out_ptr + o, value, mask=live)


@triton.jit
def _gather_kernel(  # type: ignore[no-untyped-def]
    data_ptr, idx_ptr, out_ptr, bad_ptr,
    n_out, n_idx, post, size, axis_stride,
    D1, D2, D3, S0, S1, S2, S3,
    RANK: tl.constexpr, CHECK: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Gather: output (pre, n_idx, post) in C order; index j = flat position in indices."""
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    t = o // post
    j = t % n_idx
    rest = _rest_offset((t // n_idx) * post + o % post, D1, D2, D3, S0, S1, S2, S3, RANK)
    _take(data_ptr, idx_ptr, out_ptr, bad_ptr, o, o < n_out, j, rest, size, axis_stride, CHECK)


@triton.jit
def _gather_elements_kernel(  # type: ignore[no-untyped-def]
    data_ptr, idx_ptr, out_ptr, bad_ptr,
    n_out, length, post, size, axis_stride,
    D1, D2, D3, S0, S1, S2, S3,
    RANK: tl.constexpr, CHECK: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """GatherElements: output = indices' shape, (pre, length, post) in C order."""
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    rest = _rest_offset(o // post // length * post + o % post, D1, D2, D3, S0, S1, S2, S3, RANK)
    _take(data_ptr, idx_ptr, out_ptr, bad_ptr, o, o < n_out, o, rest, size, axis_stride, CHECK)


def _collapsed(sizes: list[int], strides: list[int]) -> list[tuple[int, int]] | None:
    """The dims off the axis as few (size, stride) pairs as C-order traversal allows.

    Size-1 dims go; neighbours merge where the outer stride is the inner extent. None if
    more than :data:`MAX_REST_DIMS` remain.
    """
    dims: list[tuple[int, int]] = []
    for n, s in zip(sizes, strides, strict=True):
        if n == 1:
            continue
        if dims and dims[-1][1] == n * s:
            dims[-1] = (dims[-1][0] * n, s)
        else:
            dims.append((n, s))
    return dims if len(dims) <= MAX_REST_DIMS else None


def _rest(data: torch.Tensor, shape: Sequence[int], plan: Plan) -> list[tuple[int, int]] | None:
    """The output's dims off the axis (``shape``'s) with the data's strides, collapsed.

    ``shape`` is the operator's walk over data: data's own (Gather), or the indices'
    (GatherElements: the output's, which may be smaller than data's off the axis).
    """
    ax = plan.axis
    sizes = [n for d, n in enumerate(shape) if d != ax]
    strides = [s for d, s in enumerate(data.stride()) if d != ax]
    return _collapsed(sizes, strides)


def supports(data: Array, indices: Array, plan: Plan, walk: Sequence[int]) -> bool:
    """Whether the kernels can take these tensors, wherever they are (no device test)."""
    return (
        type(data) is torch.Tensor
        and type(indices) is torch.Tensor
        and data.layout == torch.strided
        and indices.layout == torch.strided
        and data.dtype in BITS
        and indices.dtype in INDEX_TYPES
        and data.device == indices.device
        and not data.is_conj()
        and not data.is_neg()
        and _rest(data, walk, plan) is not None
    )


def serves(data: Array, indices: Array, plan: Plan, walk: Sequence[int]) -> bool:
    """Whether a torch call runs here: CUDA tensors outside autograd and tracing, large enough.

    The size test (:data:`MIN_OUTPUTS`) comes first: small calls stay on torch's kernels.
    ``walk``: the shape the operator's kernel walks over data (see :func:`_rest`).
    """
    if int(np.prod(plan.out_shape, dtype=np.int64)) < MIN_OUTPUTS:
        return False
    return (
        isinstance(data, torch.Tensor)
        and data.is_cuda
        and not torch.compiler.is_compiling()
        and not torch.jit.is_tracing()
        and not torch._C._functorch.is_functorch_wrapped_tensor(data)
        and not (
            isinstance(indices, torch.Tensor)
            and torch._C._functorch.is_functorch_wrapped_tensor(indices)
        )
        and not (data.requires_grad and torch.is_grad_enabled())
        and supports(data, indices, plan, walk)
    )


def _launch(
    kernel: Any,
    data: torch.Tensor,
    indices: torch.Tensor,
    plan: Plan,
    middle: int,
    walk: Sequence[int],
) -> torch.Tensor:
    """Run ``kernel``; raise ``_spec``'s IndexError for the first bad index when checked.

    A program handles ``BLOCK`` output elements. One that met a bad index records the
    smallest flat position of one in ``indices`` with ``tl.atomic_min`` into a one-element
    int64 tensor that starts at ``INT64_MAX``. A checked call reads those 8 bytes back (its
    one host synchronisation) and, only if some index was bad, that index's value; an
    unchecked call reads nothing back.

    Data is read through its own strides (a view is never copied): the dims off the axis
    are collapsed where their strides allow, and up to four of them are served (so data
    of rank 5 or less always is). Indices are made contiguous (memory in proportion to
    the output). Elements move as bits: every type is read and written as the signed
    integer of its width (bool as uint8, :data:`BITS`), so NaN payloads and signalling NaNs
    arrive unchanged; complex128 (16-byte elements) is left to the torch path.
    """
    bits = BITS[data.dtype]
    out = torch.empty(plan.out_shape, dtype=bits, device=data.device)
    n_out = out.numel()
    flat = indices.contiguous().reshape(-1)
    if n_out == 0:
        if plan.check_bounds and flat.numel():
            # Gather with an empty dim off the axis: nothing to gather, every index to check.
            lo, hi = torch.aminmax(flat)
            both: list[int] = torch.stack((lo, hi)).tolist()
            _spec.check_range(plan, both[0], both[1], lambda: indices.cpu().numpy())
        return out.view(data.dtype)
    rest = _rest(data, walk, plan)
    assert rest is not None  # supports() said so
    pad = [(1, 0)] * (MAX_REST_DIMS - len(rest)) + rest
    (_, s0), (d1, s1), (d2, s2), (d3, s3) = pad
    ax = plan.axis
    post = int(np.prod(walk[ax + 1 :], dtype=np.int64))
    bad = torch.full((1,), INT64_MAX, dtype=torch.int64, device=data.device)
    grid = (triton.cdiv(n_out, BLOCK),)
    kernel[grid](
        data.view(bits), flat, out, bad,
        n_out, middle, post, plan.size, data.stride(ax),
        d1, d2, d3, s0, s1, s2, s3,
        RANK=len(rest), CHECK=plan.check_bounds, BLOCK=BLOCK,
    )  # fmt: skip
    if plan.check_bounds:
        first = int(bad.item())  # one 8-byte read back: the call's one synchronisation
        if first != INT64_MAX:
            value = int(flat[first].item())
            position = tuple(int(i) for i in np.unravel_index(first, tuple(indices.shape)))
            raise _spec.out_of_range(plan, value, position)
    return out.view(data.dtype)


def gather(data: torch.Tensor, indices: torch.Tensor, plan: Plan) -> torch.Tensor:
    """ONNX Gather of a plan :func:`supports`, in one kernel."""
    return _launch(_gather_kernel, data, indices, plan, max(indices.numel(), 1), data.shape)


def gather_elements(data: torch.Tensor, indices: torch.Tensor, plan: Plan) -> torch.Tensor:
    """GatherElements (ONNX or OpenVINO) of a plan :func:`supports`, in one kernel.

    The indices may be smaller than data off the axis (``plan.trim``): the kernel walks
    the indices' shape with the data's strides, so no trimmed view is needed.
    """
    middle = max(indices.shape[plan.axis], 1)
    return _launch(_gather_elements_kernel, data, indices, plan, middle, indices.shape)
