"""Stereo beyond the disparity: the geometry of a rectified pair, depth images and point
clouds computed on the device (stereo_image_proc's point_cloud_node, without ROS)."""
