"""Loaded into every Python process of the rehearsal (PYTHONPATH): the CDK app the CLI runs and
moto's server. A connection or name lookup to anything but loopback is refused and written to
``$FMC_NET_LOG``, which the rehearsal asserts is empty. Unix sockets (paths) are local."""

import os
import socket

_LOG = os.environ.get("FMC_NET_LOG")
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_getaddrinfo = socket.getaddrinfo


def _local(host: object) -> bool:
    host = host.decode() if isinstance(host, bytes) else str(host)
    return host in ("localhost", "::1", "None", "") or host.startswith(("127.", "::ffff:127."))


def _refuse(what: str) -> OSError:
    if _LOG:
        with open(_LOG, "a") as fh:
            fh.write(f"python {os.getpid()} {what}\n")
    return OSError(f"rehearsal network guard: {what} refused (loopback only)")


def _guarded_connect(self: socket.socket, address: object) -> None:
    if isinstance(address, tuple) and not _local(address[0]):
        raise _refuse(f"connect {address!r}")
    return _connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if isinstance(address, tuple) and not _local(address[0]):
        raise _refuse(f"connect {address!r}")
    return _connect_ex(self, address)


def _guarded_getaddrinfo(host: object, *args: object, **kwargs: object) -> list:
    if host is not None and not _local(host):
        raise _refuse(f"resolve {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex
socket.getaddrinfo = _guarded_getaddrinfo
