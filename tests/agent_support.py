"""An AI agent's side of signing a member in to the tool server, for the tests: an https server on
loopback that serves Client ID Metadata Documents (with a certificate of its own, which the
provider is told to trust through CLIENT_DOCUMENT_CA_FILE), able to answer badly on purpose
(too big, too slow, the wrong status), and a consent driver for the SDK's redirect handler."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class Reply:
    body: bytes
    status: int = 200
    content_type: str = "application/json"
    trickle: float = 0.0  # seconds between bytes: a slow server
    no_length: bool = False  # no Content-Length (the reader must count)


@dataclass
class DocumentHost:
    base: str  # https://localhost:PORT
    ca_file: Path
    replies: dict[str, Reply] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)

    def serve(self, path: str, document: dict | bytes, **kw) -> str:
        """Serve `document` at `path`; returns its URL."""
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.replies[path] = Reply(body, **kw)
        return self.base + path


def _certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "agent-cert.pem", directory / "agent-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@contextmanager
def document_host(directory: Path) -> Iterator[DocumentHost]:
    """An https server on 127.0.0.1 (named `localhost` in its URLs and certificate)."""
    cert_path, key_path = _certificate(directory)
    host = DocumentHost("", cert_path)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            host.hits[self.path] = host.hits.get(self.path, 0) + 1
            reply = host.replies.get(self.path)
            if reply is None:
                self.send_error(404)
                return
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            if not reply.no_length:
                self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            try:
                if reply.trickle:
                    for byte in reply.body:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(reply.trickle)
                else:
                    self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    host.base = f"https://localhost:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()
