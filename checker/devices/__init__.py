"""Any device, by its outputs: the device kit a device runs (`checker device-kit`) and its runners."""
