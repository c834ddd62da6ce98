"""Loopback TCP servers that stand in for a host's SSH port in the unit tests (real sockets on 127.0.0.1;
nothing else is contacted). One server, one behaviour towards each connection:

- "close":  accepts and closes at once (no SSH greeting)
- "silent": accepts and never says anything (an SSH server that hangs)
- "http":   accepts, sends an HTTP error line and closes (some other service on the port)
- "ssh":    sends an SSH greeting line, then says nothing more: it passes the reachability probe (which
            reads the greeting) and never lets an SSH login finish

Held connections are closed when the block ends.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

BEHAVIOURS = ("close", "silent", "http", "ssh")


@contextlib.contextmanager
def loopback_port(behaviour: str, backlog: int = 512) -> Iterator[int]:
    """A port on 127.0.0.1 whose server treats every connection as `behaviour` says; yields the port."""
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"behaviour {behaviour!r}: one of {', '.join(BEHAVIOURS)}")
    server = socket.create_server(("127.0.0.1", 0), backlog=backlog)
    # The accept loop wakes this often to see whether the block has ended.
    server.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            if behaviour == "close":
                conn.close()
                continue
            if behaviour == "http":
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                conn.close()
                continue
            if behaviour == "ssh":
                conn.sendall(b"SSH-2.0-OpenSSH_9.2p1 test\r\n")
            held.append(conn)  # "silent" and "ssh": kept open, nothing more said

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()
