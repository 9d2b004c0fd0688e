"""Vehicle and sensor attitude: roll, pitch, yaw ↔ rotation matrices and quaternions; and
the vehicle's depth ↔ the hydrostatic pressure of its depth sensor.

REP-103 conventions: a body frame x forward, y left, z up; roll, pitch and yaw (radians) are
rotations about the fixed x, y and z axes applied in that order, so a body vector ``p``
points along ``R p`` in the parent frame with

    R(roll, pitch, yaw) = Rz(yaw) Ry(pitch) Rx(roll)

(tf2's ``setRPY``). Quaternions are ``(x, y, z, w)``, as ``geometry_msgs/Quaternion``.
Shared by the simulator (which casts beams with it) and the ingest (which places them).
Depth is positive down and the pressure absolute, p = p_surface + ρ g depth: the ingest's
``depth_from_pressure``, the MAVLink bridge's depth sensor and the simulated autopilot's all
use this one pair.
"""

from __future__ import annotations

import math

import numpy as np


def rotation_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """R = Rz(yaw) Ry(pitch) Rx(roll), (3, 3): body → parent."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def quaternion_from_rpy(roll: float, pitch: float, yaw: float
                        ) -> tuple[float, float, float, float]:
    """The unit quaternion (x, y, z, w) of :func:`rotation_matrix`."""
    cr, sr = math.cos(0.5 * roll), math.sin(0.5 * roll)
    cp, sp = math.cos(0.5 * pitch), math.sin(0.5 * pitch)
    cy, sy = math.cos(0.5 * yaw), math.sin(0.5 * yaw)
    return (sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)


def yaw_from_quaternion(q) -> float:
    """z-y-x Euler yaw [rad] in (-π, π] of a quaternion (x, y, z, w), taken as a unit one."""
    x, y, z, w = q
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def roll_pitch_from_quaternion(q) -> tuple[float, float]:
    """(roll, pitch) rad of a quaternion (x, y, z, w), normalised first; pitch in
    [-π/2, π/2] (at ±π/2 roll and yaw are one degree of freedom and roll is returned)."""
    x, y, z, w = (float(v) for v in q)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2.0 * (w * y - z * x))))
    return roll, pitch


GRAVITY = 9.80665  # m/s², standard gravity


def depth_from_pressure(pressure: float, water_density: float,
                        surface_pressure: float) -> float:
    """Hydrostatic depth [m, positive down] of an absolute ``pressure`` [Pa] below a surface at
    ``surface_pressure`` [Pa], in water of ``water_density`` [kg/m³]."""
    return (pressure - surface_pressure) / (water_density * GRAVITY)


def pressure_at_depth(depth: float, water_density: float, surface_pressure: float) -> float:
    """The absolute pressure [Pa] at ``depth`` [m, positive down]: the inverse of
    :func:`depth_from_pressure`."""
    return surface_pressure + water_density * GRAVITY * depth
