"""Checks that an ONNX model release is a complete bundle that reproduces its reference outputs."""

from __future__ import annotations

__version__ = "0.1.0"
