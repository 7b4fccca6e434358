"""Conformance tooling: the loop oracle, the example generator and the differential runner.

In the package, not beside the tests, so that ``python -m onnx_gather check`` proves on a
user's own machine and libraries what CI proves. Its modules import hypothesis, onnx,
onnxruntime or openvino when imported; ``import onnx_gather`` imports none of them.
"""
