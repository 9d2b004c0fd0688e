"""Sensor ingest without ROS: odometry and sonar readings in, georeferenced sample batches out.

:mod:`.core` coordinates the parts (:class:`Ingest`, configured by :mod:`.config`), each of
which checks its input: :mod:`.poses` (the odometry and its :mod:`.pose_history`; the
``map`` ← ``odom`` transform of :mod:`.navigation`), :mod:`.sonar` (ranges and swaths),
:mod:`.channels` (the scalar channels and where they come from), :mod:`.attitude_depth` (an
IMU's attitude and a depth sensor's depth), :mod:`.fixes` (position fixes and the
corrections of :mod:`.navigation`), :mod:`.streams` (frames, the clock rule of
:mod:`.clock_jumps`, order, completeness), :mod:`.placement` (readings at the poses) and
:mod:`.batcher` (decision-point batches, checked with :mod:`.cloud_filters`); drops are
counted by the reasons of :mod:`.reasons`. :mod:`.feeders` hands each message type to it;
:mod:`.sequence_gaps` counts messages lost before they reached a node.
"""

from poam_ros.ingest.batcher import RawBatch, SampleBatch
from poam_ros.ingest.config import IngestConfig
from poam_ros.ingest.core import Ingest
from poam_ros.ingest.sequence_gaps import SequenceGaps

__all__ = ["Ingest", "IngestConfig", "RawBatch", "SampleBatch", "SequenceGaps"]
