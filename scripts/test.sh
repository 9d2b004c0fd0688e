#!/usr/bin/env bash
# Installs what the tests need, builds the package with colcon as a ROS workspace would, checks
# that the installed executables run from the install space, then runs the whole test suite
# (tests/test_lint.py lints the tree with ruff).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python=${PYTHON:-python3}

repo=$(pwd)
workspace=$(mktemp -d)
trap 'rm -rf "$workspace"' EXIT
if ! (cd "$workspace" && colcon --log-base log build --base-paths "$repo" --build-base build \
        --install-base install >build.log 2>&1); then
  cat "$workspace/build.log"; exit 1
fi
# The node executables lie where `ros2 run poam_ros <name>` looks, and nothing is on $PATH.
lib="$workspace/install/poam_ros/lib/poam_ros"
for node in nodes/*; do
  node=$(basename "$node") && [ "$node" != node ] || continue  # nodes/node: the launcher
  [ -x "$lib/$node" ] || { echo "colcon build: no executable $lib/$node"; exit 1; }
done
[ ! -e "$workspace/install/poam_ros/bin" ] || { echo "colcon build: a bin/ folder"; exit 1; }
(set +u && source "$workspace/install/setup.bash" && set -u && cd / &&
   "$lib/poam-ros" --help >/dev/null &&
   python3 -c "import poam_ros.sim, poam_ros.models" && echo "colcon build: ok")

"$python" -m pytest -q "$@"
