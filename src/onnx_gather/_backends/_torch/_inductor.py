"""The INDUCTOR route: torch's operations with the check in the graph, for ``torch.compile``."""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.weak import WeakIdKeyDictionary

from onnx_gather._backends._positions import tuple_rows
from onnx_gather._backends._torch._dtypes import SIGNED
from onnx_gather._backends._torch._indices import counted_int64, rule, xp
from onnx_gather._indices import from_end
from onnx_gather._spec.tensor_scatter import TensorScatterPlan

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec import Plan
    from onnx_gather._typing import ScatterPlan


@torch.library.custom_op("onnx_gather::out_of_range_v1", mutates_args=())
def _out_of_range(
    indices: torch.Tensor, sizes: torch.Tensor, op: str, axis: int, coordinates: bool
) -> torch.Tensor:
    """The branch of :func:`counted_in_graph`'s check that runs where an index is out of range.

    It raises the eager IndexError. Its arguments are :func:`._indices.checked_indices`' with the
    sizes as a tensor (int64, one per coordinate, or 0-d), which a compiler passes to the
    branch as it passes ``indices``. Where no index is out of range (under ``vmap`` of a
    batch both branches run) it returns the other branch's value, an int64 zero.

    ``op`` chooses the rule: the operator's range (:func:`._indices.rule`), or, where it
    names TensorScatter, its write-index rule (:func:`write_indices_checked`: ``sizes``
    holds the cache's length along the axis and the update's, ``coordinates`` says
    circular mode).
    """
    from onnx_gather import _ops

    operator = _ops.BY_MESSAGE_NAME.get(op)
    if operator is not None and operator[0].method == "tensor_scatter":
        size, length = sizes.tolist()
        plan = TensorScatterPlan(op, True, (), axis, size, length, coordinates)
        plan.raise_if_bad(indices.reshape(-1).tolist())
    else:
        counted_int64(indices, rule(op, axis, sizes.reshape(-1).tolist(), coordinates))
    return torch.zeros((), dtype=torch.int64, device=indices.device)


@_out_of_range.register_fake
def _out_of_range_fake(
    indices: torch.Tensor, sizes: torch.Tensor, op: str, axis: int, coordinates: bool
) -> torch.Tensor:
    return indices.new_empty((), dtype=torch.int64)


@_out_of_range.register_vmap
def _out_of_range_vmap(
    info: Any, in_dims: tuple[int | None, ...], indices: torch.Tensor, sizes: torch.Tensor,
    *args: Any,
) -> tuple[torch.Tensor, None]:  # fmt: skip
    # Element-wise: the batch is checked as one tensor, batch dim first (a message's
    # position then reads (batch entry, position in the indices)); one zero for all.
    # (``torch.cond`` of a batch may batch the sizes too: every entry holds the same.)
    bdim, sizes_bdim = in_dims[:2]
    if bdim is not None:
        indices = indices.movedim(bdim, 0)
    if sizes_bdim is not None:
        sizes = sizes.select(sizes_bdim, 0)
    return _out_of_range(indices, sizes, *args), None


def decomposing() -> bool:
    """Whether torch asks for ``run_v1``'s decomposition to record it (``run_decompositions``).

    There ``torch.export`` retraces the program functionalized (a FunctionalTensorMode is
    in force) while exporting. Its own trace (``torch.export.export``) runs fake tensors
    alone, and ``torch.compile`` is not exporting: both keep ``run_v1``
    (:mod:`._decomposed`).
    """
    return torch.compiler.is_exporting() and _functional_mode() is not None


def cond(pred: torch.Tensor, true_fn: Any, false_fn: Any, operands: tuple[Any, ...]) -> Any:
    """``torch.cond``; in a decomposition (:func:`decomposing`) its operator itself.

    ``torch.cond`` outside Dynamo compiles one wrapper function with Dynamo at each call,
    and Dynamo keeps what it compiled for that function's code, with guards on the
    operands' sizes: checked against a later call's symbolic sizes (a program exported
    with ``torch.export.Dim``) each guard of a former call's static sizes specializes
    them, and the program then refuses any other size ("Guard failed: 4 ==
    d.size()[0]", torch 2.13). The operator (``cond_op``, what Dynamo's graph calls)
    traces the branches under the decomposition's own trace, with nothing kept.
    """
    if decomposing():
        from torch._higher_order_ops.cond import cond_op

        return cond_op(pred, true_fn, false_fn, operands)
    return torch.cond(pred, true_fn, false_fn, operands)


def _no_index_out_of_range(indices: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    return indices.new_zeros((), dtype=torch.int64)


def _counted_by(indices: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Checked ``indices`` counted from the end (int64), on sizes given as a tensor.

    ``sizes``: one per coordinate (the last dim of ``indices``), or 0-d, one for every
    index. :func:`onnx_gather._indices.counted` without its policies (the graph checks the
    range; clamping too slowed inductor's row copies: docs/performance.md), written on a
    tensor of sizes because a ``torch.cond`` branch must not capture symbolic ones
    (:func:`counted_in_graph`).
    """
    return from_end(torch, indices.to(torch.int64), sizes)


def _counted_or_out_of_range(
    indices: torch.Tensor, sizes: torch.Tensor, op: str, axis: int, coordinates: bool
) -> torch.Tensor:
    return _counted_by(indices, sizes) + _out_of_range(indices, sizes, op, axis, coordinates)


def _compiler_checks_indexing() -> bool:
    """Whether the graph being compiled checks every index it reads or writes itself.

    Inductor's generated code asserts that each indirect index is inside its dimension
    (``torch._inductor.config.assert_indirect_indexing``, on by default; the error is a
    RuntimeError "index out of bounds: 0 <= tmp3 < 4"), and torch's own kernels, which
    Dynamo's other backends run, raise for one (RuntimeError "index 5 is out of bounds
    ..."). ``torch.export`` keeps the operator :func:`_out_of_range` instead: an exported
    program runs where neither may hold.
    """
    if torch.compiler.is_exporting():
        return False
    from torch._inductor import config

    return bool(config.assert_indirect_indexing)


def counted_in_graph(indices: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Under ``torch.compile``: indices counted from the end, their range checked in the graph.

    Where the compiler checks every index its kernels read (:func:`_compiler_checks_indexing`)
    the indices are only counted from the end: an index out of range stays out of range
    (one below ``-size`` becomes ``size``: inductor counts a negative index of
    ``index_select`` and advanced indexing from the end again) and the compiled gather's
    own check raises for it; inductor fuses the counting into the gather, so a checked call
    costs what the native one costs. Its error cannot name the value or its position.

    Elsewhere (``torch.export``) a reduction finds whether any index is out of range and
    only then does the graph run :func:`_out_of_range` (``torch.cond``), which raises the
    eager IndexError; what the kernel reads depends on the check, so the compiler can
    neither drop it nor run the kernel before it. Where each index serves one output
    (GatherElements, GatherND of elements) the counting is fused into that kernel, with
    the branch's zero added; where it serves a row of them, the cond hands over the
    counted indices (adding the count and the zero inside slowed inductor's row copies:
    it recomputes an index for every vector of the row; docs/performance.md).
    """
    if _compiler_checks_indexing():
        wide = indices.to(torch.int64)
        sizes: Any = plan.size
        if plan.coordinates and all(type(size) is int for size in plan.sizes):
            # A constant of the graph, which inductor writes into its kernel as numbers
            # (a stack of 0-d tensors was a buffer and two views made on every call, which
            # slowed graphs of many GatherND calls: docs/performance.md).
            sizes = torch.tensor(plan.sizes, dtype=torch.int64, device=wide.device)
        elif plan.coordinates:  # (symbolic sizes: one 0-d tensor each, stacked)
            sizes = torch.stack([wide.new_full((), size) for size in plan.sizes])
        # Below -size, size: out of range upward, never a negative index that a kernel
        # (inductor's index_select and advanced indexing) would count from the end again.
        return from_end(torch, torch.where(wide < -sizes, sizes, wide), sizes)
    bad = torch.any(plan.outside(indices, xp))
    # The sizes go to the branch as a tensor operand, not as numbers it captures: inductor
    # fails on a branch that captured sizes that later became numbers (a tensor of
    # several sizes makes symbolic ones numbers), in its FakeTensorUpdater: "A subgraph
    # argument other than striding has been modified" (pytorch/pytorch#156819).
    # (One per coordinate, else one for every index: 0-d, so it broadcasts to any shape.)
    stacked = (
        torch.stack([indices.new_full((), size, dtype=torch.int64) for size in plan.sizes])
        if plan.coordinates
        else indices.new_full((), plan.size, dtype=torch.int64)
    )
    rule = (plan.op, plan.axis, plan.coordinates)
    if math.prod(plan.out_shape) > math.prod(indices.shape):  # rows
        return cond(
            bad, lambda i, s: _counted_or_out_of_range(i, s, *rule), _counted_by, (indices, stacked)
        )
    zero = cond(
        bad, lambda i, s: _out_of_range(i, s, *rule), _no_index_out_of_range, (indices, stacked)
    )
    return _counted_by(indices, stacked) + zero


def write_indices_checked(indices: torch.Tensor, plan: TensorScatterPlan) -> torch.Tensor:
    """TensorScatter's write indices checked in the graph: an int64 zero, or its IndexError.

    As :func:`counted_in_graph`'s check under ``torch.export``: a reduction finds whether
    a write index breaks the rule (:meth:`~onnx_gather._spec.tensor_scatter.TensorScatterPlan.bad`),
    and only then does the graph run :func:`_out_of_range`, which raises the eager
    IndexError naming it. Its sizes are the cache's length along the axis and the
    update's, a tensor operand; its ``coordinates`` flag is the circular mode.
    """
    bad = torch.any(plan.bad(indices))
    sizes = torch.stack(
        [indices.new_full((), n, dtype=torch.int64) for n in (plan.size, plan.length)]
    )
    rule = (plan.op, plan.axis, plan.circular)
    zero: torch.Tensor = cond(
        bad, lambda i, s: _out_of_range(i, s, *rule), _no_index_out_of_range, (indices, sizes)
    )
    return zero


#: Under ``torch.compile``: the most pairs of updates compared to find each target's
#: winner (``_winners``); beyond, the fused operator serves.
_PAIRS = 1 << 16


def in_graph_serves(
    data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, plan: ScatterPlan
) -> bool:
    """Whether a scatter under ``torch.compile`` is torch's operations (:func:`scatter`).

    Reduction ``none``, checked, sizes known (not symbolic), on the CPU (the route has not
    run on a GPU), no gradient (``index_put``'s would give a duplicated winner its
    gradient once per duplicate), and few enough pairs of updates that could meet.
    """
    if plan.reduction != "none" or not plan.check_bounds or not data.is_cpu:
        return False
    if torch.is_grad_enabled() and (data.requires_grad or updates.requires_grad):
        return False
    shapes = (*data.shape, *indices.shape, *updates.shape)
    if not all(isinstance(n, int) for n in shapes):
        return False
    return _meeting_pairs(indices, plan) <= _PAIRS


def _meeting_pairs(indices: torch.Tensor, plan: ScatterPlan) -> int:
    """How many pairs of updates :func:`_winners` compares: those that could meet."""
    if plan.coordinates:  # any two index tuples, or one per row of data
        return min(math.prod(indices.shape[:-1]) ** 2, math.prod(plan.sizes))
    # ScatterElements: two updates meet only along the axis, elsewhere at the same place.
    return math.prod(indices.shape) * indices.shape[plan.axis]


def scatter(
    data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, plan: ScatterPlan
) -> torch.Tensor:
    """A checked scatter without reduction, as torch operations a compiler fuses.

    Each target's last update in C order is found by comparing the updates that could
    meet (no duplicates, no comparison: a KV-cache write); then one ``index_put`` writes
    every update's target with its winner's value, so duplicates write the same bits and
    the order they land in cannot show. Given ``out=data``, inductor turns the
    ``index_put`` and the copy into ``out`` into one write of the targets, as it does for
    ``c[:, :, pos] = new``. The range: an index out of range makes every index out of
    range, so the compiled kernel's own check (inductor's, or torch's where another
    backend runs the graph) raises on the first target, before anything is written.

    What depends on the indices alone (:func:`_targets_in_graph`) is traced once per
    index tensor of the graph (:func:`_once_per_trace`): a model's layers that write at
    the same positions share one check.
    """
    key = (plan.coordinates, plan.axis, tuple(plan.sizes))  # (all _targets_in_graph reads)
    targets, pick = _once_per_trace(indices, key, lambda: _targets_in_graph(indices, plan))
    if plan.coordinates:
        k = len(plan.sizes)
        values = updates.reshape(targets.shape[0], *data.shape[k:])
        if pick is not None:
            values = values[pick]
        flat = data.reshape(math.prod(plan.sizes), *data.shape[k:])
        return flat.index_put((targets,), values).reshape(data.shape)
    if pick is not None:
        updates = torch.gather(updates, plan.axis, pick)
    place = [
        torch.arange(n, device=indices.device).reshape(
            [n if e == d else 1 for e in range(indices.dim())]
        )
        for d, n in enumerate(indices.shape)
    ]
    place[plan.axis] = targets
    return data.index_put(tuple(place), updates)


def _targets_in_graph(indices: torch.Tensor, plan: ScatterPlan) -> tuple[torch.Tensor, Any]:
    """:func:`scatter`'s targets and which update each takes (None: its own).

    ScatterND: each index tuple's row of data seen as (cells, rest), and the position of
    its row's last tuple; ScatterElements: each update's position along the axis, and
    its target's last update along it. Out of range anywhere: every target out of range.
    """
    wide = indices.to(torch.int64)
    if not plan.coordinates:
        size = plan.size
        counted = from_end(torch, wide, size)
        bad = torch.any((counted < 0) | (counted >= size))
        counted = torch.where(bad, size, counted)
        return counted, _winners(counted, plan.axis)
    k, cells = len(plan.sizes), math.prod(plan.sizes)
    sizes = torch.tensor(plan.sizes, dtype=torch.int64, device=wide.device)
    counted = from_end(torch, wide, sizes)
    outside = (counted < 0) | (counted >= sizes)
    # Each tuple out of range or not, its k coordinates or'd: no reduction, so the
    # check joins the loops that follow rather than running as a loop of its own.
    stray = outside[..., 0]
    for j in range(1, k):
        stray = stray | outside[..., j]
    stray = stray.reshape(-1)
    # Each tuple's row of data seen as (cells, rest): one number to compare and to
    # index with (tuples of k compared pairwise compiled and ran slower).
    rows = tuple_rows(xp, counted, plan.sizes, 0, wide.device).reshape(-1)
    n = rows.shape[0]
    position = torch.arange(n, device=wide.device)
    if n > 1 and n * n <= _PAIRS:
        # Two maxima over the pairs, in one kernel: the last of the rows equal to
        # each (itself too), and each tuple's row, or ``cells`` where any tuple is out
        # of range. Both are buffers the layers' writes load, rather than values each
        # write recomputes (it compiles faster and runs as fast as the check and the
        # pick derived from one reduction's result). The check as a reduction of its
        # own ran slower, before the pairs carried it; coordinates wrapped one by one
        # with their sizes as numbers compiled faster but ran slower: inductor then
        # keeps each pair's comparison in a buffer.
        #
        # The two are one reduction of 2n outputs over n: its loop is not the n tuples'
        # loop of the layers' writes, so inductor's outer-loop fusion does not analyse
        # it with each of them (most of the code generation went there). Its 2n rows
        # are the tuples twice over (``repeat``: index arithmetic, no copy), the first n
        # taking the equal rows' positions, the others the rows: no tensor is stacked,
        # so the compiled program allocates one buffer, the reduction's. Stacked, the
        # two halves were a buffer of n x 2n and two views of it, each a Python tensor
        # the program made on every call, which slowed the step. (The figures:
        # docs/performance.md.)
        i = position.repeat(2).unsqueeze(1)
        mine = rows.repeat(2).unsqueeze(1)
        first = (torch.arange(2 * n, device=wide.device) < n).unsqueeze(1)
        value = torch.where(
            first,
            torch.where(mine == rows, position, -1),
            torch.where(stray, cells, torch.where(i == position, mine, -1)),
        )
        last, targets = value.amax(1).reshape(2, n)
        return targets, last
    if n > 1:
        # Each row's last tuple, in a buffer of data's rows. The pairs would compile
        # slower here but this buffer runs slower (it is filled each call): beyond
        # _PAIRS the compile time decides (docs/performance.md).
        rows = torch.where(torch.any(stray), cells, rows)
        latest = torch.full((cells + 1,), -1, dtype=torch.int64, device=wide.device)
        return rows, latest.scatter_reduce(0, rows, position, "amax")[rows]
    return torch.where(stray, cells, rows), None


#: What :func:`_once_per_trace` traced, by index tensor: (trace, value, version, key) ->
#: (the trace's mode, the value, the result), the first two weakly.
#: (torch's dictionary by identity: a tensor's ``==`` compares its values.)
_TRACED: Any = WeakIdKeyDictionary()


def _once_per_trace(indices: torch.Tensor, key: Any, make: Callable[[], Any]) -> Any:
    """``make()``, traced once for each index tensor's value, range rule and shape in one trace.

    The eight layers of a KV-cache step write at the same positions with one index
    tensor. Traced eight times, the check's reduction was computed once by inductor but
    stored into eight buffers the compiled program allocates on every call, which
    slowed the step (docs/performance.md).

    In each pass over fake tensors: the one that records the graph (AOTAutograd's
    trace, under a proxy mode), and those that run the library's body for metadata only
    (Dynamo's example values, AOTAutograd's pass that collects mutations): each would
    otherwise build the check eight times, at a cost in compile time. Not where Dynamo itself traces this Python (host indices
    reach ``scatter`` through the library's body): the lookup cannot be traced there.
    The entry is keyed by the pass's mode (the proxy mode, else the functional mode,
    else the fake tensors' mode), by the index tensor itself (each pass has its own)
    and by the indices' current value: functionalization replaces the value a
    functional tensor wraps on any in-place change of it or of its base, including
    ones that do not bump the wrapper's version (``x.data`` writes, a custom operator
    that mutates without an ADInplaceOrView kernel); the version is kept too.
    (``torch._sync`` and ``torch._from_functional_tensor``: private, what
    functionalization itself uses to read a wrapped value, torch 2.13.)
    """
    if torch.compiler.is_dynamo_compiling():
        return make()
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    value = indices
    if isinstance(indices, FunctionalTensor):
        torch._sync(indices)  # (a pending change of the base reaches this view first)
        value = torch._from_functional_tensor(indices.elem)
    mode: Any = get_proxy_mode() or _functional_mode()
    if mode is None:
        if not isinstance(value, FakeTensor):  # (an eager call: nothing to share)
            return make()
        mode = value.fake_mode
    full = (id(mode), id(value), indices._version, key)
    entries = _TRACED.setdefault(indices, {})
    hit = entries.get(full)
    if hit is not None and hit[0]() is mode and hit[1]() is value:
        return hit[2]
    result = make()
    entries[full] = (weakref.ref(mode), weakref.ref(value), result)
    return result


def _functional_mode() -> Any:
    """The functionalization mode in force, or None."""
    return torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FUNCTIONAL)


def _winners(targets: torch.Tensor, axis: int) -> torch.Tensor | None:
    """For each update, the position along ``axis`` of its target's last update; None: no meeting.

    ``targets``: where each update lands; two updates meet only when they are at the same
    place off ``axis``. One update along the axis meets none.
    """
    m = targets.shape[axis]
    if m <= 1:
        return None
    mine = targets.unsqueeze(axis + 1)  # [..., i, 1, ...]
    theirs = targets.unsqueeze(axis)  # [..., 1, j, ...]
    shape = [1] * (targets.dim() + 1)
    shape[axis + 1] = m
    position = torch.arange(m, device=targets.device).reshape(shape)
    # The last j whose target equals i's (i itself at least).
    return torch.where(mine == theirs, position, -1).amax(axis + 1)


def tensor_scatter(
    data: torch.Tensor, updates: torch.Tensor, indices: torch.Tensor, plan: TensorScatterPlan
) -> torch.Tensor:
    """Under ``torch.compile``: the same writes as torch operations, the check in the graph.

    No value can be read while Dynamo traces. Checked, a bad write index sends every
    write out of the axis, so the compiled ``index_put``'s own bounds check raises on the
    first one, before anything is written (its message cannot name the value).
    Unchecked, the writes that fall outside go to one extra position past the axis, cut
    off afterwards (a mask would give the graph a data-dependent shape).
    """
    signed = SIGNED.get(data.dtype)
    if signed is not None:
        unsigned = data.dtype
        return tensor_scatter(data.view(signed), updates.view(signed), indices, plan).view(unsigned)
    starts = indices.to(torch.int64).reshape(-1)
    offsets = torch.arange(plan.length, device=starts.device)
    positions, keep = plan.positions(starts, offsets, torch)
    batch = torch.arange(starts.shape[0], device=starts.device)[:, None]
    source = updates.movedim(plan.axis, 1)
    if plan.check_bounds:
        bad = torch.any(plan.bad(starts))
        positions = torch.where(bad, plan.size, positions)
        result = data.clone()
        result[plan.target(batch, positions)] = source
        return result
    spare = data.narrow(plan.axis, 0, 1)
    widened = torch.cat([data, spare], dim=plan.axis)
    positions = torch.where(keep, positions, plan.size)
    widened[plan.target(batch, positions)] = source
    return widened.narrow(plan.axis, 0, plan.size).contiguous()
