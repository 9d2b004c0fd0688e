"""One MAVLink endpoint over pymavlink: open, read without blocking, send, count.

``mavutil.mavlink_connection`` takes the connection strings users know from MAVProxy and
ArduPilot's docs: ``udpin:HOST:PORT`` listens (and answers every peer heard from),
``udpout:HOST:PORT`` sends to a peer, ``tcp:HOST:PORT`` connects, anything else is a
serial device opened at ``baud``. pymavlink picks the wire protocol from the MAVLINK20
environment variable when it loads its dialect; ArduPilot speaks MAVLink 2, so this module
selects it before the first connection (pymavlink itself sets the same variable when it
meets a MAVLink 2 packet). Its parser runs in robust mode: garbage bytes and packets with
a bad CRC come back as ``BAD_DATA`` messages instead of exceptions, and are counted here.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Iterator

from poam_ros.dependencies import import_optional  # noqa: E402

os.environ.setdefault("MAVLINK20", "1")
import_optional("pymavlink", "the MAVLink bridge")  # the extra mavlink, said when missing
from pymavlink import mavutil  # noqa: E402  (after the protocol choice above)

mavutil.set_dialect("ardupilotmega")
mavlink = mavutil.mavlink

MAX_MESSAGES_PER_READ = 1000  # one read never spins longer than this many messages


class MavlinkLink:
    """A pymavlink connection that reads what is waiting and counts what it sees.

    Args:
        connection: a pymavlink connection string (module docstring).
        system_id, component_id: this endpoint's MAVLink ids.
        baud: baud rate of a serial device.
    """

    def __init__(self, connection: str, system_id: int, component_id: int,
                 baud: int = 115200) -> None:
        self.connection = connection
        self._port = mavutil.mavlink_connection(connection, baud=baud,
                                                source_system=system_id,
                                                source_component=component_id,
                                                autoreconnect=True)
        self.bad: Counter[str] = Counter()  # garbage and corrupted packets, by kind
        self.sent: Counter[str] = Counter()  # messages sent, by type

    @property
    def mav(self):
        """The pymavlink encoder/sender (``mav.<name>_encode``); read on each use, since
        pymavlink replaces it when it switches protocol versions."""
        return self._port.mav

    def receive(self) -> Iterator:
        """The messages waiting, decoded; bad data is counted (``bad_crc``, ``bad_bytes``)
        and skipped."""
        for _ in range(MAX_MESSAGES_PER_READ):
            message = self._port.recv_msg()
            if message is None:
                return
            if message.get_type() == "BAD_DATA":
                self.bad["bad_crc" if "CRC" in str(message.reason) else "bad_bytes"] += 1
                continue
            yield message

    def fileno(self) -> int:
        """The link's file descriptor, to wait on with :func:`select.select` (a benchmark
        that must see a message the moment it arrives)."""
        return self._port.fd

    def send(self, message) -> None:
        """Send one packed message (``link.mav.<name>_encode(...)``) and count it."""
        self.mav.send(message)
        self.sent[message.get_type()] += 1

    def close(self) -> None:
        self._port.close()
