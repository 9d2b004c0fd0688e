"""A Foxglove WebSocket client for the tests: ``websockets`` and the schemas' own protobuf
descriptors, as a conforming client decodes them."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import threading

import numpy as np
import websockets
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

SUBPROTOCOL = "foxglove.sdk.v1"  # what foxglove-sdk 0.30's server offers
MESSAGE_DATA = 1  # binary opcode of a message, then subscription id u32, log time u64


class Watcher:
    """A Foxglove client: subscribes to every channel as it is advertised and keeps, per topic,
    the messages decoded (protobuf with the advertised schema, or JSON)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.channels: dict[int, dict] = {}
        self.received: dict[str, list] = {}
        self.errors: list[dict] = []
        self._subscriptions: dict[int, int] = {}
        self._classes: dict[int, type] = {}

    async def watch(self, done: threading.Event) -> None:
        """Connect (retrying until the server listens or ``done``) and watch until ``done``."""
        while True:
            try:
                connection = await websockets.connect(f"ws://127.0.0.1:{self.port}",
                                                      subprotocols=[SUBPROTOCOL])
                break
            except OSError:  # not listening yet
                if done.is_set():
                    return
                await asyncio.sleep(0.2)
        async with connection as socket:
            assert socket.subprotocol == SUBPROTOCOL
            while True:
                try:
                    data = await asyncio.wait_for(socket.recv(), 0.5)
                except asyncio.TimeoutError:
                    if done.is_set():
                        return
                    continue
                except websockets.ConnectionClosed:  # the server ended with its mission
                    return
                if isinstance(data, str):
                    await self._control(socket, json.loads(data))
                else:
                    self._message(data)

    async def _control(self, socket, message: dict) -> None:
        if message["op"] == "advertise":
            fresh = [channel for channel in message["channels"]
                     if channel["id"] not in self.channels]
            for channel in fresh:
                self.channels[channel["id"]] = channel
                self._subscriptions[len(self._subscriptions) + 1] = channel["id"]
            await socket.send(json.dumps({"op": "subscribe", "subscriptions": [
                {"id": sub, "channelId": channel} for sub, channel in
                self._subscriptions.items() if channel in {c["id"] for c in fresh}]}))
        elif message["op"] == "status" and message.get("level", 0) >= 2:
            self.errors.append(message)

    def _message(self, data: bytes) -> None:
        opcode, subscription, _ = struct.unpack_from("<BIQ", data)
        assert opcode == MESSAGE_DATA
        channel = self.channels[self._subscriptions[subscription]]
        payload = data[13:]
        if channel["encoding"] == "json":
            decoded = json.loads(payload)
        else:
            decoded = self._class(channel).FromString(payload)
        self.received.setdefault(channel["topic"], []).append(decoded)

    def _class(self, channel: dict) -> type:
        if channel["id"] not in self._classes:
            files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
            pool = descriptor_pool.DescriptorPool()
            for file in files.file:
                pool.Add(file)
            self._classes[channel["id"]] = message_factory.GetMessageClass(
                pool.FindMessageTypeByName(channel["schemaName"]))
        return self._classes[channel["id"]]


def grid_values(grid) -> np.ndarray:
    rows = len(grid.data) // grid.row_stride
    return np.frombuffer(grid.data, dtype=np.float32).reshape(rows, grid.column_count)


def watch_in_thread(port: int) -> tuple[Watcher, threading.Event, threading.Thread]:
    """A :class:`Watcher` of ``port`` running in its own thread until the event is set."""
    watcher, done = Watcher(port), threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(watcher.watch(done)), daemon=True)
    thread.start()
    return watcher, done, thread
