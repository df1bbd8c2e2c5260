"""GPU-accelerated vision in OpenCL: dense optical flow, SURF features and ELAS stereo.

The algorithm layer (everything outside ``cl_vision_nodes.ros``) imports only numpy, pyopencl and
the standard library, so it runs on a GPU box without ROS; ``cl_vision_nodes.ros`` is the only
package that imports rclpy.
"""

__version__ = '0.1.0'
