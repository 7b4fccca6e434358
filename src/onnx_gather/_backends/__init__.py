"""One small module per array library.

Each backend turns a checked, normalised call (a :class:`onnx_gather._spec.Plan`) into that
library's fastest native kernel. A backend module imports its framework at import time, so
:mod:`onnx_gather._dispatch` imports it only for an array whose library is already loaded.
"""
