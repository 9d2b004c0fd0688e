"""The live view's frames and topics (REP-103 frames; the topics a Foxglove layout names)."""

MAP_FRAME, BASE_FRAME, SONAR_FRAME = "map", "base_link", "sonar_link"
MEAN, STD = "/map/mean", "/map/std"  # the depth's layers; a channel's: /map/<name>/mean, ...
POSE, TRANSFORMS, FIX, WORKSPACE = "/vehicle/pose", "/tf", "/vehicle/fix", "/workspace"
SCENE, SOUNDINGS, INDUCING, STATUS = "/scene", "/soundings", "/map/inducing", "/mission/status"
MEMORY = "/map/memory"  # a dual GP's memory of past samples
#: every topic the view serves besides the further channels' grids
TOPICS = (MEAN, STD, POSE, TRANSFORMS, FIX, WORKSPACE, SCENE, SOUNDINGS, INDUCING, STATUS, MEMORY)
