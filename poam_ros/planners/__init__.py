"""Planners: the pilot survey, the paper's max-entropy planner and comparison baselines.

A planner's :meth:`~Planner.plan` maps the robot position (2,) and a predictive-std
callable to the next waypoints (K, 2) in metres, in the ``map`` frame.
"""

from poam_ros.planners.base import Planner, PredictStd
from poam_ros.planners.factory import PLANNERS, make_planner
from poam_ros.planners.input_check import InputCheck, InputCheckConfig
from poam_ros.planners.lawnmower import LawnmowerConfig, LawnmowerPlanner
from poam_ros.planners.max_entropy import MaxEntropyConfig, MaxEntropyPlanner
from poam_ros.planners.pilot import (
                                     PilotSurveyConfig,
                                     bernstein_basis,
                                     bezier_curve,
                                     pilot_control_points,
                                     pilot_survey,
)
from poam_ros.planners.progress import PlanProgress
from poam_ros.planners.random_planner import RandomPlanner

__all__ = [
    "PLANNERS", "InputCheck", "InputCheckConfig", "LawnmowerConfig", "LawnmowerPlanner",
    "MaxEntropyConfig", "MaxEntropyPlanner", "PilotSurveyConfig", "PlanProgress", "Planner",
    "PredictStd", "RandomPlanner", "bernstein_basis", "bezier_curve", "make_planner",
    "pilot_control_points", "pilot_survey",
]
