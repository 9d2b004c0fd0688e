"""The composition root: the mission's setup read from one parameter file, the configuration it
gives every node, and the simulator's truth it is scored against.

It sits above every core room (params, models, ingest, planners, mapping, geo, sim) and below
the runners (the ROS-free mission, the nodes, the command line, the benchmarks); nothing in a
core room imports it.
"""
