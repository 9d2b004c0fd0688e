"""A mapping method of the tests' own, to show what adding one takes: its class file (this)
and one registry line, which the tests add for their duration."""

from poam_ros.models.poam import POAM


class ToyPoam(POAM):
    """POAM under a name of its own, reading its family's options as any method would (here
    none of its own: POAM's)."""

    method = "toy-poam"
