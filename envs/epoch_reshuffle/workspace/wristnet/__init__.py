"""wristnet: gesture classification from wrist IMU window summaries."""
