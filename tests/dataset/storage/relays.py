"""A misbehaving HTTP relay on 127.0.0.1 in front of moto's S3 server, for the tests of what
jisu makes of a server that is not quite S3: one that ignores ``Range`` or ``If-Match``, sends
no ETag, or drips its answers (headers, then a byte every so often). Same shape as
:class:`.s3_server.CountingProxy` (which counts), with faults switched on per test."""

from __future__ import annotations

import http.client
import http.server
import threading
import time
from collections.abc import Callable


class FaultyRelay:
    """Forwards HTTP requests to ``target`` (host:port) with the faults set on it.

    Attributes:
        drop_range: requests go on without their ``Range`` header (the whole object comes
            back, with status 200).
        drop_if_match: requests go on without ``If-Match`` (the condition is not enforced).
        strip_etag: answers come back without their ``ETag`` header.
        drip: ``drip(method, path, range_header)``: whether to drip this answer: its headers
            at once, then its body one byte every ``drip_s`` seconds (until the client goes).
        dripped: answers dripped so far.
    """

    def __init__(self, target: str, drip_s: float = 0.2) -> None:
        self.target = target.removeprefix("http://")
        self.drop_range = self.drop_if_match = self.strip_etag = False
        self.drip: Callable[[str, str, str], bool] | None = None
        self.drip_s = drip_s
        self.dripped = 0
        self._closed = threading.Event()
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                drop = {"connection"}
                if relay.drop_range:
                    drop.add("range")
                if relay.drop_if_match:
                    drop.add("if-match")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in drop}
                conn = http.client.HTTPConnection(relay.target, timeout=30)
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                conn.close()
                self.send_response(response.status)
                skip = {"transfer-encoding", "connection", "content-length"}
                if relay.strip_etag:
                    skip.add("etag")
                for key, value in response.getheaders():
                    if key.lower() not in skip:
                        self.send_header(key, value)
                size = response.getheader("Content-Length") or "0"  # HEAD: the object's size
                self.send_header(
                    "Content-Length", size if self.command == "HEAD" else str(len(data))
                )
                self.end_headers()
                if self.command == "HEAD":
                    return
                rng = self.headers.get("Range") or ""
                if relay.drip is not None and relay.drip(self.command, self.path, rng):
                    relay.dripped += 1
                    for k in range(len(data)):
                        if relay._closed.is_set():
                            break
                        self.wfile.write(data[k : k + 1])
                        self.wfile.flush()
                        time.sleep(relay.drip_s)
                    self.close_connection = True
                    return
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        self.server.shutdown()
        self.server.server_close()
