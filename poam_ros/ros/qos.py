"""QoS of every stream of the graph contract, in one place so that both ends agree.

| profile         | streams                                 | policy                          |
|-----------------|-----------------------------------------|---------------------------------|
| ODOMETRY        | odom (planner's subscription)           | reliable, volatile, depth 100   |
| SENSORS         | odom, fix, depth, altimeter (the        | reliable, volatile, depth 100   |
|                 | bridge's; the realtime simulator's),    |                                 |
|                 | fleet/out, fleet/in                     |                                 |
| SENSOR_BACKLOG  | odom, sonar/range, sonar/swath          | reliable, volatile, depth 2000  |
|                 | (the ingest's subscriptions)            |                                 |
| simulated_      | the simulator's sensor publishers,      | reliable, volatile, depth 2000  |
| sensors()       | lockstep (realtime: SENSORS)            | or ``max_backlog`` if more      |
| LATCHED         | plan, goal, map, map/std, map/inducing, | reliable, transient local, 1    |
|                 | map/evaluation                          |                                 |
| LATCHED_HISTORY | map, map/inducing, map/evaluation, goal | reliable, transient local, 100  |
|                 | (the mission monitor's subscriptions)   |                                 |
| SAMPLES         | samples                                 | reliable, volatile, depth 100   |
| QUERY           | uncertainty/query, uncertainty/response | reliable, volatile, depth 10    |
| DIAGNOSTICS     | /diagnostics                            | reliable, volatile, depth 10    |
| DIAGNOSTICS_ALL | /diagnostics (the mission monitor's and | reliable, volatile, depth 1000  |
|                 | the planner's mapper count)             |                                 |
| CLOCK           | /clock (simulated AUV, bag player)      | reliable, volatile, depth 10    |

Latched streams hand their last message to subscribers that join later (RViz, a restarted
planner); a subscriber must itself ask for transient-local durability to receive it.
A subscriber's depth bounds what waits for its executor: a reader that falls behind loses
the oldest. ``LATCHED_HISTORY`` and ``DIAGNOSTICS_ALL`` are deep because the mission
monitor pairs every map with its mapper's status (a fleet's mappers publish dozens a second
between them, and the monitor's one executor also scores), and a lockstep planner waits for
its map's count in the mapper's status (one lost, the fleet's clock holds for ever);
``SAMPLES`` is, because no batch
may be lost on its way to a map. ``SENSOR_BACKLOG`` is deep enough to absorb a backlog:
rclpy's executor takes one message per subscription per wait, so a fast simulation can run
the odometry queue far behind the sonar's. The simulator's publishers keep as many: a
reliable writer drops a message the reader's DDS has not acknowledged once ``depth`` newer ones
are out, so a consumer whose receiving thread is starved on a loaded CPU would lose messages
that lockstep's pacing (``max_backlog``, fewer than either queue holds) lets it owe. The bag
player's and the recorder's bag topics adapt theirs to a
bag's or a graph's publishers instead (:mod:`poam_ros.ros.bag_qos`).
"""

import copy

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def _reliable(depth: int, durability=DurabilityPolicy.VOLATILE) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE, durability=durability)


ODOMETRY = _reliable(100)
SENSORS = _reliable(100)
SENSOR_BACKLOG = _reliable(2000)
LATCHED = _reliable(1, DurabilityPolicy.TRANSIENT_LOCAL)
LATCHED_HISTORY = _reliable(100, DurabilityPolicy.TRANSIENT_LOCAL)
SAMPLES = _reliable(100)
QUERY = _reliable(10)
DIAGNOSTICS = _reliable(10)
DIAGNOSTICS_ALL = _reliable(1000)
CLOCK = _reliable(10)


def simulated_sensors(lockstep: bool, max_backlog: int) -> QoSProfile:
    """The simulator's sensor publishers. In lockstep, as deep as the ingest's queue and at
    least ``max_backlog``, so that no message the pacing lets a consumer owe leaves the
    writer's history before the consumer's DDS has it; in realtime nothing bounds what a
    consumer owes, and a deep history would only hand a starved one stale readings late:
    ``SENSORS``."""
    return _reliable(max(SENSOR_BACKLOG.depth, max_backlog)) if lockstep else SENSORS


def overridable(profile: QoSProfile) -> QoSProfile:
    """A copy of ``profile`` for a subscription whose policies ``qos_overrides.*`` parameters
    may set: rclpy writes the overrides into the profile it is given, which, shared, would
    carry one topic's override to every later subscription of the process."""
    return copy.copy(profile)
