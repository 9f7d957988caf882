"""The gateway client reads answers with a cap: a tiny server on loopback that answers too
much (an announced length past the cap, or a body without a length that never ends) is
refused with GatewayError, and the client never reads it whole; an answer within the cap is
read."""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any, Iterator, List

import pytest

from dgsp_verifier.client import MAX_ANSWER_BYTES, GatewayError, fetch_answer


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "endless"
    written: List[int] = []

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        chunk = b"a" * 65536
        try:
            if self.mode == "announced":
                self.send_header("Content-Length", str(1 << 40))
                self.end_headers()
                self.wfile.write(b'"' + chunk)
                self.written.append(len(chunk))
            elif self.mode == "small":
                body = json.dumps({"status": "ok", "pad": "a" * 1000}).encode()
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
                self.wfile.write(b'1\r\n"\r\n')
                while True:
                    self.wfile.write(framed)
                    self.written.append(len(chunk))
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture()
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    _Handler.written = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(httpd: http.server.ThreadingHTTPServer) -> str:
    host, port = httpd.server_address[:2]
    return f"http://{host!s}:{port}"


def test_an_announced_answer_past_the_cap_is_refused_before_reading(server: http.server.ThreadingHTTPServer) -> None:
    _Handler.mode = "announced"
    with pytest.raises(GatewayError) as e:
        fetch_answer(_url(server), b"m", b"\xd6sig", timeout=10)
    assert f"more than the {MAX_ANSWER_BYTES} this client reads" in str(e.value)
    assert e.value.status == 200


def test_an_endless_answer_is_read_up_to_the_cap_only(server: http.server.ThreadingHTTPServer) -> None:
    _Handler.mode = "endless"
    with pytest.raises(GatewayError) as e:
        fetch_answer(_url(server), b"m", b"\xd6sig", timeout=10, max_answer_bytes=1 << 20)
    assert "larger than the 1048576 bytes this client reads" in str(e.value)
    # The server wrote the cap and what the socket buffers took before the client left.
    assert sum(_Handler.written) < (1 << 20) + (32 << 20)


def test_an_answer_within_the_cap_is_read(server: http.server.ThreadingHTTPServer) -> None:
    _Handler.mode = "small"
    answer, snapshot = fetch_answer(_url(server), b"m", b"\xd6sig", timeout=10)
    assert answer["status"] == "ok" and snapshot is None
    with pytest.raises(GatewayError):
        fetch_answer(_url(server), b"m", b"\xd6sig", timeout=10, max_answer_bytes=100)
