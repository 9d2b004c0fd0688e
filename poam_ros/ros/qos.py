"""QoS of every stream of the graph contract, in one place so that both ends agree.

| profile     | streams                                 | policy                          |
|-------------|-----------------------------------------|---------------------------------|
| ODOMETRY    | odom                                    | reliable, volatile, depth 100   |
| LATCHED     | plan, goal, map, map/std, map/inducing, | reliable, transient local, 1    |
|             | map/evaluation                          |                                 |
| SAMPLES     | samples                                 | reliable, volatile, depth 10    |
| QUERY       | uncertainty/query, uncertainty/response | reliable, volatile, depth 10    |
| DIAGNOSTICS | /diagnostics                            | reliable, volatile, depth 10    |

Latched streams hand their last message to subscribers that join later (RViz, a restarted
planner); a subscriber must itself ask for transient-local durability to receive it.
"""

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def _reliable(depth: int, durability=DurabilityPolicy.VOLATILE) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE, durability=durability)


ODOMETRY = _reliable(100)
LATCHED = _reliable(1, DurabilityPolicy.TRANSIENT_LOCAL)
SAMPLES = _reliable(10)
QUERY = _reliable(10)
DIAGNOSTICS = _reliable(10)
