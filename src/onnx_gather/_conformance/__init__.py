"""Conformance tooling: the loop oracle, the example generator and the differential runner.

Why it ships inside the package rather than beside the tests: ``python -m onnx_gather
check`` is a user's command, which proves on their own machine and their own installed
libraries (versions, devices) that every backend agrees with ONNX. The property tests
(``tests/test_properties.py``) and the peers script (``tools/peers.py``) use the same code,
so what a user runs is what CI runs.

The generator needs hypothesis and the ONNX comparisons need onnx / onnxruntime
(``openvino_peer``: openvino); none of them is imported by ``import onnx_gather``, only when
one of these modules is imported.
"""
