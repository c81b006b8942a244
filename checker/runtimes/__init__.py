"""Other onnxruntime releases and builds: cached environments, and the worker that runs graphs there."""
