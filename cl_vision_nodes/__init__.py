"""GPU-accelerated vision in OpenCL: dense optical flow, SURF features and ELAS stereo.

Layers (checked by test/test_layers.py): the algorithm layer (every package but ``ros`` and
``tools``) never imports ROS and needs numpy, pyopencl and PyYAML; OpenCV only in the modules that
read or write image files or draw pictures (``dataio.formats``, ``dataio.synthetic``,
``elas.colormap``, ``surf.draw``). ``cl_vision_nodes.ros`` is the only package that imports ROS
at module level; ``cl_vision_nodes.tools`` imports it only inside the subcommands that talk to
ROS.
"""

__version__ = '0.1.0'
