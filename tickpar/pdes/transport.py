"""The transports between LPs: point-to-point, FIFO per (source, destination) pair, any picklable object.

The same LP code runs on three transports: :class:`ThreadTransport` (queues
between threads sharing one model), :class:`SocketTransport` (socket pairs
between processes, non-blocking, so two LPs sending large packets to each
other cannot deadlock) and :class:`MPITransport` (mpi4py point-to-point,
``isend`` + matched probe).
"""

from __future__ import annotations

import os
import pickle
import queue as queue_mod
import select
import socket
import struct
import time
from collections import deque
from typing import Any, Protocol

__all__ = ["MPITransport", "SocketTransport", "ThreadTransport", "Transport"]


class Transport(Protocol):
    """Point-to-point, FIFO per (source, destination) pair, any picklable object."""

    def send(self, dst: int, obj: Any) -> None: ...

    def recv(self, timeout: float | None) -> tuple[int, Any]:
        """Block for the next packet from any peer; ``TimeoutError`` after ``timeout`` seconds."""
        ...

    def poll(self) -> tuple[int, Any] | None:
        """The next packet if one is already here, else ``None``."""
        ...

    def finish(self) -> None:
        """Complete every send (called once, at the end)."""
        ...


class ThreadTransport:
    """One inbox (``queue.SimpleQueue``) per LP; packets are passed by reference."""

    def __init__(self, inboxes: list[queue_mod.SimpleQueue[tuple[int, Any]]], index: int) -> None:
        self.inboxes = inboxes
        self.index = index
        self.inbox = inboxes[index]

    @classmethod
    def group(cls, n: int) -> list[ThreadTransport]:
        inboxes: list[queue_mod.SimpleQueue[tuple[int, Any]]] = [queue_mod.SimpleQueue() for _ in range(n)]
        return [cls(inboxes, i) for i in range(n)]

    def send(self, dst: int, obj: Any) -> None:
        self.inboxes[dst].put((self.index, obj))

    def recv(self, timeout: float | None) -> tuple[int, Any]:
        try:
            return self.inbox.get(timeout=timeout)
        except queue_mod.Empty:
            raise TimeoutError from None

    def poll(self) -> tuple[int, Any] | None:
        try:
            return self.inbox.get_nowait()
        except queue_mod.Empty:
            return None

    def finish(self) -> None:
        return None


_HEADER = struct.Struct("!I")


class SocketTransport:
    """Length-prefixed pickles over non-blocking socket pairs, one per peer, driven by ``poll``.

    Sends never block: what the kernel does not take is buffered and written
    whenever the transport waits, so two LPs exchanging large packets make
    progress together.
    """

    def __init__(self, index: int, socks: dict[int, socket.socket]) -> None:
        self.index = index
        self.socks = socks
        self.poller = select.poll()
        self.peer_of: dict[int, int] = {}
        self.inbuf: dict[int, bytearray] = {}
        self.outbuf: dict[int, bytearray] = {}
        self.frames: deque[tuple[int, Any]] = deque()
        self.eof: set[int] = set()
        for peer, sock in socks.items():
            sock.setblocking(False)
            self.peer_of[sock.fileno()] = peer
            self.inbuf[peer] = bytearray()
            self.outbuf[peer] = bytearray()
            self.poller.register(sock.fileno(), select.POLLIN)

    def send(self, dst: int, obj: Any) -> None:
        data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        frame = _HEADER.pack(len(data)) + data
        buf = self.outbuf[dst]
        if buf:
            buf += frame
            return
        sock = self.socks[dst]
        try:
            sent = sock.send(frame)
        except BlockingIOError:
            sent = 0
        if sent < len(frame):
            buf += frame[sent:]
            self.poller.modify(sock.fileno(), select.POLLIN | select.POLLOUT)

    def _flush(self, peer: int) -> None:
        buf = self.outbuf[peer]
        sock = self.socks[peer]
        while buf:
            try:
                sent = sock.send(buf)
            except BlockingIOError:
                return
            del buf[:sent]
        if peer not in self.eof:
            self.poller.modify(sock.fileno(), select.POLLIN)

    def _read(self, peer: int) -> None:
        sock = self.socks[peer]
        buf = self.inbuf[peer]
        while True:
            try:
                chunk = sock.recv(1 << 20)
            except BlockingIOError:
                break
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.eof.add(peer)
                self.poller.unregister(sock.fileno())
                break
            buf += chunk
        while len(buf) >= 4:
            (size,) = _HEADER.unpack_from(buf)
            if len(buf) < 4 + size:
                break
            self.frames.append((peer, pickle.loads(bytes(buf[4 : 4 + size]))))
            del buf[: 4 + size]

    def _pump(self, timeout_ms: int | None) -> None:
        for fd, ev in self.poller.poll(timeout_ms):
            peer = self.peer_of[fd]
            if ev & (select.POLLIN | select.POLLERR | select.POLLHUP):
                self._read(peer)
            if ev & select.POLLOUT and peer not in self.eof:
                self._flush(peer)

    def recv(self, timeout: float | None) -> tuple[int, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.frames:
            if len(self.eof) == len(self.socks):
                raise ConnectionError(f"LP {self.index}: every peer closed its connection")
            if deadline is None:
                self._pump(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self._pump(max(1, int(left * 1000)))
        return self.frames.popleft()

    def poll(self) -> tuple[int, Any] | None:
        if not self.frames:
            self._pump(0)
        return self.frames.popleft() if self.frames else None

    def finish(self) -> None:
        deadline = time.monotonic() + 30.0
        while any(self.outbuf[p] for p in self.outbuf if p not in self.eof):
            if time.monotonic() > deadline:
                raise TimeoutError(f"LP {self.index}: peers stopped reading")
            self._pump(100)

    def close(self) -> None:
        for sock in self.socks.values():
            sock.close()


class MPITransport:
    """mpi4py point-to-point on ``COMM_WORLD``: pickled ``isend``, matched probe + receive.

    A waiting rank polls (as MPICH itself does); with ``yield_cpu`` (more ranks
    than cores) it yields the CPU after every empty probe, so the rank it waits
    for can run.
    """

    TAG = 7

    def __init__(self, comm: Any, yield_cpu: bool = False) -> None:
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.index = comm.Get_rank()
        self.reqs: list[Any] = []
        self.yield_cpu = yield_cpu

    def send(self, dst: int, obj: Any) -> None:
        self.reqs.append(self.comm.isend(obj, dest=dst, tag=self.TAG))
        if len(self.reqs) > 256:
            self.reqs = [r for r in self.reqs if not r.Test()]

    def recv(self, timeout: float | None) -> tuple[int, Any]:
        comm, MPI = self.comm, self.MPI
        status = MPI.Status()
        msg = comm.improbe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status)
        if msg is None:
            deadline = None if timeout is None else time.monotonic() + timeout
            spins = 0
            pause = os.sched_yield if self.yield_cpu else None
            while msg is None:
                if pause is not None:
                    pause()
                msg = comm.improbe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status)
                spins += 1
                if deadline is not None and spins % 2048 == 0 and time.monotonic() > deadline:
                    raise TimeoutError
        return status.Get_source(), msg.recv()

    def poll(self) -> tuple[int, Any] | None:
        MPI = self.MPI
        status = MPI.Status()
        msg = self.comm.improbe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status)
        if msg is None:
            return None
        return status.Get_source(), msg.recv()

    def finish(self) -> None:
        self.MPI.Request.waitall(self.reqs)
        self.reqs = []
