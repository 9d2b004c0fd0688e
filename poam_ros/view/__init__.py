"""The live view: a Foxglove WebSocket server showing a mission as it runs (no ROS needed).

:mod:`.config` (where it listens), :mod:`.frames` (a moment of the mission and its messages),
:mod:`.server` (:class:`~.server.LiveView`), :mod:`.layout`, :mod:`.mission_feed`. The
Foxglove SDK is the extra ``view`` (``pip install '.[view]'``); importing the server or the
frames without it raises :class:`~poam_ros.dependencies.MissingDependency`.
"""
