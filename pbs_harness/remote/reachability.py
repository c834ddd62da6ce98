"""Does a set of hosts answer on their SSH ports? All probed at once, under one deadline.

The whole probe takes at most `within` seconds whatever the number of hosts: names are resolved
in daemon threads and every connection is started at once (non-blocking sockets), so a hundred
silent hosts cost as much time as one. A port that accepts the connection must then greet as an SSH
server does (RFC 4253: a line starting "SSH-", which the server sends first): a port that is open but
silent, closes, or speaks another protocol used to pass, and Ansible then waited on it. The answer is a
failure text per host that did not answer.
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


# RFC 4253 4.2: the server may send other lines before its identification; the whole greeting is short.
_GREETING_MAX = 8192


def _greeting_problem(received: bytes, closed: bool) -> str | None:
    """None when `received` holds an SSH identification line; else what is wrong, or "" to read on."""
    if any(line.startswith(b"SSH-") for line in received.split(b"\n")[:-1]):
        return None
    if closed:
        got = f": it sent {received[:60]!r}" if received else ""
        return f"the port accepted the connection and closed it without an SSH greeting{got}"
    if len(received) > _GREETING_MAX:
        first = received.split(b"\n", 1)[0][:60]
        return f"the port answered, but not as an SSH server: it sent {first!r}"
    return ""


def _on_ready(
    sel: selectors.BaseSelector, key: selectors.SelectorKey, received: dict[str, bytes], failures: dict[str, str]
) -> None:
    """One socket is ready: connected (or refused), then waiting for the greeting, then judged."""
    sock, name = key.fileobj, key.data
    if name not in received:  # connected (or refused): now wait for the greeting
        err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)  # type: ignore[union-attr]
        sel.unregister(sock)
        if err:
            failures[name] = os.strerror(err)
            sock.close()  # type: ignore[union-attr]
        else:
            received[name] = b""
            sel.register(sock, selectors.EVENT_READ, name)
        return
    try:
        chunk = sock.recv(4096)  # type: ignore[union-attr]
    except OSError as exc:
        chunk, failures[name] = b"", f"the connection failed before an SSH greeting: {exc.strerror}"
    received[name] += chunk
    problem = None if name in failures else _greeting_problem(received[name], closed=not chunk)
    if problem != "":
        if problem:
            failures[name] = problem
        sel.unregister(sock)
        sock.close()  # type: ignore[union-attr]


def probe(endpoints: dict[str, Endpoint], within: float) -> dict[str, str]:
    """Failure text per name for the endpoints that did not accept a TCP connection and greet as an SSH
    server within `within` s."""
    deadline = time.monotonic() + within
    addresses, failures = _resolve(endpoints, deadline)
    _allow_sockets(len(addresses))
    sel = selectors.DefaultSelector()
    received: dict[str, bytes] = {}
    try:
        for name, (family, sockaddr) in addresses.items():
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setblocking(False)
            err = sock.connect_ex(sockaddr)
            if err == 0:
                received[name] = b""
                sel.register(sock, selectors.EVENT_READ, name)
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
                _on_ready(sel, key, received, failures)
        for key in list(sel.get_map().values()):
            name = key.data
            if name in received:
                failures[name] = (
                    f"the port accepted the connection but sent no SSH greeting within {within:g}s "
                    "(is an SSH server listening there?)"
                )
            else:
                failures[name] = f"no answer within {within:g}s"
            sel.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
    finally:
        sel.close()
    return failures
