"""Types of the compiled kernel (``_kernels.c``), optional at build time."""

import numpy as np

def gather(
    data: np.ndarray,
    indices: np.ndarray,
    axis: int,
    out: np.ndarray | None,
    check: bool,
    threads: int,
    /,
) -> np.ndarray | None: ...
def openvino_gather(
    data: np.ndarray,
    indices: np.ndarray,
    axis: int,
    out: np.ndarray | None,
    negatives: bool,
    threads: int,
    /,
) -> np.ndarray: ...
def gather_elements(
    data: np.ndarray,
    indices: np.ndarray,
    axis: int,
    out: np.ndarray | None,
    check: bool,
    threads: int,
    /,
) -> np.ndarray | None: ...
def gather_nd(
    data: np.ndarray,
    indices: np.ndarray,
    batch_dims: int,
    out: np.ndarray | None,
    check: bool,
    threads: int,
    /,
) -> np.ndarray | None: ...
def scatter_elements(
    out: np.ndarray,
    data: np.ndarray | None,
    indices: np.ndarray,
    updates: np.ndarray,
    axis: int,
    reduction: int,
    kind: int,
    check: int,
    threads: int,
    /,
) -> bool | None: ...
def scatter_nd(
    out: np.ndarray,
    data: np.ndarray | None,
    indices: np.ndarray,
    updates: np.ndarray,
    reduction: int,
    kind: int,
    check: int,
    threads: int,
    /,
) -> bool | None: ...
def tensor_scatter_slices(
    cache: np.ndarray,
    update: np.ndarray,
    write_indices: np.ndarray,
    axis: int,
    circular: bool,
    /,
) -> bool: ...
def tensor_scatter_slices_at(
    cache: int,
    update: int,
    write_indices: int,
    batch: int,
    outer: int,
    size: int,
    length: int,
    inner: int,
    circular: bool,
    /,
) -> bool: ...
def scatter_nd_at(
    data: int, updates: int, indices: int, count: int, dims: tuple[int, ...], row: int, /
) -> bool: ...
def scatter_elements_at(
    data: int,
    updates: int,
    indices: int,
    outer: int,
    size: int,
    length: int,
    inner: int,
    itemsize: int,
    /,
) -> bool: ...
def gather_elements_at(
    out: int,
    data: int,
    indices: int,
    outer: int,
    size: int,
    length: int,
    inner: int,
    itemsize: int,
    /,
) -> bool: ...
def outside_at(address: int, count: int, itemsize: int, size: int, /) -> bool: ...
def view(
    base: object,
    address: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...] | None,
    typenum: int,
    /,
) -> np.ndarray: ...
def _tune(min_per_thread: int = -1, block_bytes: int = -1, /) -> tuple[int, int]: ...
