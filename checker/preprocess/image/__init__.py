"""Image inputs: a raw image file through the declared steps (or the shorthand fields) to the tensor; the kind
the stages see is kind.KIND."""
