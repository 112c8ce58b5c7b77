"""A small subscriber for a kvpool master's KV events (--kv_events_endpoint).

The stream is vLLM's KV-events format (docs/operations.md, "KV events"): multipart ZMQ messages
[topic, seq (8-byte big-endian), msgpack EventBatch], the batch an array
[ts, [event, ...]] of tagged arrays:

    ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
     lora_name]
    ["BlockRemoved", block_hashes, medium]
    ["AllBlocksCleared"]

Needs python3-zmq and python3-msgpack (Debian). Not thread-safe: one subscriber per thread.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

import msgpack
import zmq

BlockHash = Union[bytes, int]
END_SEQ = -1
GONE_SEQ = -2


@dataclasses.dataclass
class BlockStored:
    block_hashes: list
    parent_block_hash: Optional[BlockHash]
    token_ids: list
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]
    lora_name: Optional[str] = None


@dataclasses.dataclass
class BlockRemoved:
    block_hashes: list
    medium: Optional[str]


@dataclasses.dataclass
class AllBlocksCleared:
    pass


@dataclasses.dataclass
class EventBatch:
    seq: int
    topic: str
    ts: float
    events: list


class KvEventReplayError(RuntimeError):
    """The publisher no longer holds (part of) the requested range; the message says which."""


_KINDS = {"BlockStored": BlockStored, "BlockRemoved": BlockRemoved,
          "AllBlocksCleared": AllBlocksCleared}


def decode_batch(payload: bytes, seq: int = -1, topic: str = "") -> EventBatch:
    """Decodes one msgpack EventBatch; ValueError when it is not one."""
    raw = msgpack.unpackb(payload, raw=False)
    if not isinstance(raw, list) or len(raw) < 2 or not isinstance(raw[1], list):
        raise ValueError(f"not an EventBatch: {raw!r}")
    events = []
    for e in raw[1]:
        kind = _KINDS.get(e[0]) if isinstance(e, list) and e else None
        if kind is None:
            raise ValueError(f"unknown event {e!r}")
        n = len(dataclasses.fields(kind))
        events.append(kind(*e[1:1 + n]))  # later vLLM fields, if any, are ignored
    return EventBatch(seq, topic, float(raw[0]), events)


def _seq_bytes(seq: int) -> bytes:
    return seq.to_bytes(8, "big", signed=True)


class KvEventSubscriber:
    """SUB socket on `endpoint` (and a DEALER on `replay_endpoint` for replay()).

    recv() returns the next EventBatch or None after `timeout_ms`. Close it with close() or a
    `with` block; it owns its ZMQ context.
    """

    def __init__(self, endpoint: str, replay_endpoint: Optional[str] = None, topic: str = ""):
        self._ctx = zmq.Context()
        self._sub = self._ctx.socket(zmq.SUB)
        self._sub.setsockopt(zmq.LINGER, 0)
        self._sub.setsockopt_string(zmq.SUBSCRIBE, topic)
        self._sub.connect(endpoint)
        self._replay_endpoint = replay_endpoint

    def recv(self, timeout_ms: int = 1000) -> Optional[EventBatch]:
        if not self._sub.poll(timeout_ms):
            return None
        topic, seq, payload = self._sub.recv_multipart()
        return decode_batch(payload, int.from_bytes(seq, "big", signed=True), topic.decode())

    def replay(self, first: int, last: Optional[int] = None, timeout_ms: int = 5000) -> list:
        """Batches first..last (inclusive; last None: all newer) still buffered by the master.

        Raises KvEventReplayError naming what is gone when `first` is no longer buffered, and
        TimeoutError when the master does not answer within `timeout_ms`.
        """
        if self._replay_endpoint is None:
            raise ValueError("no replay_endpoint given")
        sock = self._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.connect(self._replay_endpoint)
            request = _seq_bytes(first) + (b"" if last is None else _seq_bytes(last))
            sock.send_multipart([b"", request])
            batches, error = [], None
            while True:
                if not sock.poll(timeout_ms):
                    raise TimeoutError(f"no replay answer from {self._replay_endpoint}")
                frames = sock.recv_multipart()
                seq, payload = frames[-2], frames[-1]
                n = int.from_bytes(seq, "big", signed=True)
                if n == END_SEQ:
                    break
                if n == GONE_SEQ:
                    error = payload.decode(errors="replace")
                    continue
                batches.append(decode_batch(payload, n))
            if error is not None:
                raise KvEventReplayError(error)
            return batches
        finally:
            sock.close()

    def close(self) -> None:
        self._sub.close()
        self._ctx.term()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
