"""Sensor ingest without ROS: odometry and sonar readings in, georeferenced sample batches out.

:mod:`.core` pairs readings with poses and cuts batches (:class:`Ingest`, configured by
:mod:`.config`), with
:mod:`.pose_history` (interpolated poses), :mod:`.clock_jumps` (glitched stamps told from
clock changes) and :mod:`.cloud_filters` (swath filters); :mod:`.channels` reads the scalar
channels' messages into it, :mod:`.attitude_depth` an IMU's and a depth sensor's;
:mod:`.sequence_gaps` counts messages lost before they reached a node.
"""

from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.core import REASONS, Ingest, RawBatch, SampleBatch
from poam_ros.ingest.sequence_gaps import SequenceGaps

__all__ = ["REASONS", "Ingest", "IngestConfig", "RawBatch", "SampleBatch", "SequenceGaps"]
