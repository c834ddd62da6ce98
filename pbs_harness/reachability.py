"""Does a set of hosts answer on their SSH ports? All probed at once, under one deadline.

The whole probe takes at most `within` seconds whatever the number of hosts: names are resolved
in daemon threads and every connection is started at once (non-blocking sockets), so a hundred
silent hosts cost as much time as one. The answer is a failure text per host that did not answer.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import resource
import selectors
import socket
import threading
import time

Endpoint = tuple[str, int]  # (address or name, port)

_IN_PROGRESS = {errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY}


def _resolve(endpoints: dict[str, Endpoint], deadline: float) -> tuple[dict[str, tuple], dict[str, str]]:
    """Socket addresses of the endpoints, resolving names in daemon threads (a stuck resolver is left behind)."""
    found: dict[str, tuple] = {}
    failed: dict[str, str] = {}
    pending: dict[str, threading.Thread] = {}

    def lookup(name: str, address: str, port: int) -> None:
        try:
            info = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
            found[name] = (info[0][0], info[0][4])
        except OSError as exc:
            failed[name] = f"name {address!r} does not resolve: {exc}"

    for name, (address, port) in endpoints.items():
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            thread = threading.Thread(target=lookup, args=(name, address, port), daemon=True)
            thread.start()
            pending[name] = thread
            continue
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        found[name] = (family, (address, port))
    for name, thread in pending.items():
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            failed[name] = f"name {endpoints[name][0]!r} did not resolve in time"
    return found, failed


def _allow_sockets(count: int) -> None:
    """Raise the soft open-file limit if `count` sockets at once would not fit under it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


def probe(endpoints: dict[str, Endpoint], within: float) -> dict[str, str]:
    """Failure text per name for the endpoints that did not accept a TCP connection within `within` s."""
    deadline = time.monotonic() + within
    addresses, failures = _resolve(endpoints, deadline)
    _allow_sockets(len(addresses))
    sel = selectors.DefaultSelector()
    try:
        for name, (family, sockaddr) in addresses.items():
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
            err = sock.connect_ex(sockaddr)
            if err == 0:
                sock.close()
            elif err in _IN_PROGRESS:
                sel.register(sock, selectors.EVENT_WRITE, name)
            else:
                sock.close()
                failures[name] = os.strerror(err)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for key, _ in sel.select(remaining):
                sock = key.fileobj
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)  # type: ignore[union-attr]
                if err:
                    failures[key.data] = os.strerror(err)
                sel.unregister(sock)
                sock.close()  # type: ignore[union-attr]
        for key in list(sel.get_map().values()):
            failures[key.data] = f"no answer within {within:g}s"
            sel.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
    finally:
        sel.close()
    return failures
