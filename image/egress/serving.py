"""What the gate's tunnel server and the site relay's server share: a threaded TLS server
whose every wait has a deadline, and HTTP handlers that read a request within one.

  - the TLS handshake is done within HANDSHAKE_S in all, however slowly its bytes come;
  - a whole request (line, head, body) is read within IDLE_S from the moment the server
    waits for it, so a client that sends a byte just before every timeout cannot hold it;
  - request bodies held at once are bounded (ByteBudget), so many connections of large
    bodies cannot exhaust the server's memory;
  - a refusal is one plain-text line, marked `X-Biotool-Egress: denied | paced | error`
    (biotool's client waits out `paced` after its Retry-After).

Standard library only.
"""

from __future__ import annotations

import http.server
import io
import select
import socketserver
import ssl
import threading
import time
from typing import Callable

HANDSHAKE_S = 15.0  # the whole TLS handshake, however slowly its bytes come
IDLE_S = 60.0       # a whole request (line, head, body) from the moment the server waits


def handshake(sock, ctx: ssl.SSLContext, seconds: float) -> ssl.SSLSocket:
    """The server side of TLS, done within `seconds` in all (a per-read timeout alone lets a
    slow client stretch it for ever)."""
    tls = ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    tls.setblocking(False)
    deadline = time.monotonic() + seconds
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            wait = ([tls], [])
        except ssl.SSLWantWriteError:
            wait = ([], [tls])
        left = deadline - time.monotonic()
        if left <= 0 or not any(select.select(*wait, [], left)[:2]):
            tls.close()
            raise TimeoutError("TLS handshake not done in time")
    tls.setblocking(True)
    return tls


LINGER_S = 3.0          # the longest a refused client's unread bytes are drained before close
LINGER_BYTES = 1 << 20  # and the most bytes drained
LINGER_QUIET_S = 1.0    # and no longer than this once nothing more comes


def linger(sock, seconds: float = LINGER_S, limit: int = LINGER_BYTES) -> None:
    """Read and drop what the client is still sending (within `seconds` and `limit`) before
    the close: closing with unread bytes makes the kernel send a reset, which destroys the
    answer the client has not read yet (a 414 for an over-long line was recorded, never
    seen). It stops at the client's end, or when nothing comes for LINGER_QUIET_S."""
    deadline = time.monotonic() + seconds
    got = 0
    try:
        while got < limit:
            left = deadline - time.monotonic()
            pending = isinstance(sock, ssl.SSLSocket) and sock.pending()
            if left <= 0 or not (pending or select.select([sock], [], [],
                                                          min(left, LINGER_QUIET_S))[0]):
                return
            sock.settimeout(max(left, 0.01))
            chunk = sock.recv(65536)
            if not chunk:
                return
            got += len(chunk)
    except (OSError, ValueError):
        return


def serve_then_close(tls: ssl.SSLSocket, serve: Callable[[], object]) -> None:
    """Serve an established TLS connection; a client gone mid-way is no error, and the
    connection is closed whatever happens (after `linger` when the handler `serve` returns
    answered a refusal, so the client reads it; a cut with no answer closes at once)."""
    handler = None
    try:
        handler = serve()
    except OSError:
        pass
    finally:
        if getattr(handler, "refused", False):
            linger(tls)
        try:
            tls.close()
        except OSError:
            pass


class DeadlineReader(io.RawIOBase):
    """A connection's bytes, each read bounded by what is left of one deadline."""

    def __init__(self, sock):
        self.sock, self.deadline, self.got = sock, None, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        left = IDLE_S if self.deadline is None else self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not read in time")
        self.sock.settimeout(left)
        n = self.sock.recv_into(buf)
        self.got += n
        return n


class Counting:
    """A writer that counts the bytes the client receives."""

    def __init__(self, raw):
        self.raw, self.n = raw, 0

    def write(self, b) -> int:
        self.n += len(b)
        return self.raw.write(b)

    def flush(self):
        return self.raw.flush()

    def close(self):
        return self.raw.close()

    @property
    def closed(self) -> bool:
        return self.raw.closed


class ByteBudget:
    """Bytes of request bodies a server holds at once; a request over it is refused rather
    than read."""

    def __init__(self, limit: int):
        self.limit, self.used, self.lock = limit, 0, threading.Lock()

    def take(self, n: int) -> bool:
        with self.lock:
            if n and self.used + n > self.limit:
                return False
            self.used += n
            return True

    def give(self, n: int) -> None:
        with self.lock:
            self.used -= n


class Server(socketserver.ThreadingTCPServer):
    """A threaded server whose threads never keep the process alive."""
    daemon_threads = True
    allow_reuse_address = True


class Handler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 over an already-established TLS connection, each request read by a deadline."""

    protocol_version = "HTTP/1.1"
    sys_version = ""
    who = "egress"  # the refusal's first words: "biotool egress: refused: ..."

    def setup(self):
        super().setup()
        self.reader = DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self.reader, 65536)
        self.wfile = Counting(self.wfile)

    def log_message(self, *args):  # the records are the log
        pass

    def start_request(self) -> None:
        """The deadline for the whole of the next request (line, head and body)."""
        self.reader.deadline = time.monotonic() + IDLE_S
        self.reader.got = 0

    def request_read(self, timeout: float) -> None:
        """Read in time: from here on the socket's own timeouts (`timeout`) apply."""
        self.reader.deadline = None
        self.connection.settimeout(timeout)

    def reply(self, status: int, reason: str | None, headers: list[tuple[str, str]], body: bytes,
              close: bool = False) -> None:
        self.send_response(status, reason)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def refuse(self, status: int, reason: str, decision: str, *, retry_after: float | None = None,
               close: bool = False) -> None:
        """A one-line plain-text answer; `decision` is denied, paced or error."""
        self.refused = True  # serve_then_close lingers before the close: the answer is read
        text = f"biotool {self.who}: {'paced' if decision == 'paced' else 'refused'}: {reason}\n"
        headers = [("Content-Type", "text/plain; charset=utf-8"), ("X-Biotool-Egress", decision)]
        if retry_after is not None:
            headers.append(("Retry-After", str(max(1, int(retry_after + 0.999)))))
        self.reply(status, None, headers, text.encode(), close)
