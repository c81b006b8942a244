"""Audio inputs: a raw audio file through the declared steps to the tensor; the kind the stages see is
kind.KIND."""
