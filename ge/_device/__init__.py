"""The simulated device: memory with integer addresses that kernels can dereference.

This is the lowest layer of `ge` (it imports nothing else from `ge`), so both ``ge.graph``
(``Tensor.to_device``) and ``ge.runtime`` build on it.
"""

from ge._device.memory import DeviceMemory, device_memory

__all__ = ["DeviceMemory", "device_memory"]
