"""The one device layer: device choice and probing, limits, programs by value, owned buffers,
one launch idiom (``Kernel``). Algorithm modules use OpenCL only through this package."""
