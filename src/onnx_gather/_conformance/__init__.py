"""Conformance tooling: the loop oracle, the example generator and the differential runner.

Used by ``python -m onnx_gather check``, by the property tests (``tests/test_properties.py``)
and by the peers script (``tools/peers.py``). The generator needs hypothesis and the ONNX
comparisons need onnx / onnxruntime (``openvino_peer``: openvino); none of them is imported
by ``import onnx_gather``, only when one of these modules is imported.
"""
