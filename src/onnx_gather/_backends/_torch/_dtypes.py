"""The ONNX-style names of torch's dtypes, and the signed type of each wide unsigned one."""

from __future__ import annotations

import torch

#: Each dtype the family serves, by the name ONNX (and NumPy) give it.
NAMES: dict[torch.dtype, str] = {
    torch.bool: "bool",
    torch.int8: "int8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
    torch.uint16: "uint16",
    torch.uint32: "uint32",
    torch.uint64: "uint64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float32: "float32",
    torch.float64: "float64",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}

#: The signed type of each unsigned type above 8 bits. Torch lacks most of their kernels
#: (``gather``, ``index_put``, ``neg``: pytorch/pytorch#58734), so they move and compute
#: as these: two's-complement add and mul give the same bits, and max and min compare
#: with the sign bit flipped.
SIGNED: dict[torch.dtype, torch.dtype] = {
    torch.uint16: torch.int16,
    torch.uint32: torch.int32,
    torch.uint64: torch.int64,
}


def dtype_name(x: torch.Tensor) -> str:
    """The ONNX-style name of ``x``'s dtype; torch's own name for a dtype the family lacks.

    (The planner then refuses it with a TypeError that names it.)
    """
    return name_of(x.dtype)


def name_of(dtype: torch.dtype) -> str:
    """The ONNX-style name of a torch dtype (:func:`dtype_name`)."""
    return NAMES.get(dtype, str(dtype).removeprefix("torch."))
