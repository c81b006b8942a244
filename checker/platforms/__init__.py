"""Platforms a release must hold on: CPU classes, this machine's own, and running a worker under emulation."""
