"""From a model to maps and scores: the map grid and its layers, the metrics against ground
truth and the epoch records of a mission."""
