"""Benchmarks: our calls side by side with each backend's native call, ONNX Runtime's CPU
session and the ONNX reference evaluator. Run ``python -m benchmarks --help``.
"""
