"""ament_python packaging for poam_ros; the version is read from package.xml, so the two never
disagree."""

import os
import re
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "poam_ros"
HERE = Path(__file__).resolve().parent
VERSION = re.search(r"<version>([^<]+)</version>", (HERE / "package.xml").read_text()).group(1)
# The node executables: nodes/<name> links to the one launcher, nodes/node (an sdist holds
# copies), and each is installed as lib/poam_ros/<name>, where `ros2 run` and launch_ros look,
# and nowhere on $PATH (poam_ros/ros/executables.py says which module each runs).
NODE_EXECUTABLES = sorted(path for path in glob("nodes/*") if os.path.basename(path) != "node")

setup(
    name=PACKAGE,
    version=VERSION,
    # The simulator lives in the top-level sim/ folder; the link poam_ros/sim -> ../sim
    # makes it the subpackage poam_ros.sim, in the source tree and once installed.
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*")),
        (f"share/{PACKAGE}/config", glob("config/*")),
        (f"lib/{PACKAGE}", NODE_EXECUTABLES),
    ],
    python_requires=">=3.10",
    install_requires=[
        "numpy>=1.24",
        "scipy>=1.10",
        # torch is not pinned here: GPU machines keep their own build, and scripts/setup.sh
        # installs the CPU build torch==2.13.0 first on machines without a GPU.
        "torch>=2.1",
        "gpytorch>=1.11",
        "matplotlib>=3.7",
        "shapely>=2.0",
        "pillow>=9.0",
        "pyyaml>=6.0",
        "tqdm>=4.60",
        "rosbags>=0.11.9,<0.12",  # rosbag2 (sqlite3) and message definitions, no ROS needed
        "mcap>=1.2",  # rosbag2's default MCAP storage: its records and reader
        "zstandard>=0.20",  # MCAP chunk compression (mcap needs it too)
        "pyproj>=3.4",  # lon/lat <-> map metres (poam_ros.geo)
        "rasterio>=1.4",  # GeoTIFF, NetCDF and SRTM terrain and COG export; wheels bundle GDAL
    ],
    extras_require={
        # pytest 8.2 for importorskip(exc_type=...); the mcap ROS 2 decoder is the tests'
        # independent reader of our bags; ruff, pinned, lints the tree (pyproject.toml).
        # websockets and protobuf: the tests' own Foxglove client of the live view; the tests
        # run the view and the sweep's Ray tasks too.
        "test": ["pytest>=8.2", "mcap-ros2-support>=0.5", "ruff==0.17.6", "websockets>=13",
                 "protobuf>=4.21", "foxglove-sdk>=0.30,<0.31", "ray[client]>=2.9",
                 "pymavlink>=2.4.40"],
        # Open3D's swath filters; without it the ingest uses equivalent numpy/scipy filters.
        "filters": ["open3d>=0.18"],
        # the live view's Foxglove WebSocket server (poam_ros.view): the 0.30 series speaks
        # the subprotocol foxglove.sdk.v1
        "view": ["foxglove-sdk>=0.30,<0.31", "websockets>=13"],
        # poam-ros bench sweep --cluster ray: the missions as Ray tasks
        "cluster": ["ray[client]>=2.9"],
        # the vehicle bridge: MAVLink to ArduPilot and PX4 autopilots (poam_ros.vehicle)
        "mavlink": ["pymavlink>=2.4.40"],
    },
    zip_safe=True,
    maintainer="poam_ros developers",
    maintainer_email="dev@poam-ros.invalid",
    description="POAM online attentive mapping, informative planning and a simulated AUV for ROS 2",
    license="BSD-3-Clause",
    # The one console script; colcon (setup.cfg) puts it in lib/poam_ros too, pip in bin/.
    entry_points={"console_scripts": ["poam-ros = poam_ros.cli:main"]},
)
