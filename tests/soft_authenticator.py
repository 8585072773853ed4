"""A software passkey authenticator for tests over HTTP: it answers the server's WebAuthn options
as a browser and its authenticator would (ES256, "none" attestation, user present and verified),
so the integration tests exercise the real verification without a browser. The real-browser test
uses Chromium's virtual authenticator instead."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SoftAuthenticator:
    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.credentials: dict[bytes, dict] = {}  # credential id -> {"key", "rp_id", "user_handle", "count"}

    def _client_data(self, kind: str, challenge: str) -> bytes:
        return json.dumps({"type": kind, "challenge": challenge, "origin": self.origin, "crossOrigin": False}).encode()

    def create(self, options: dict, user_verified: bool = True, counting: bool = True) -> str:
        """The JSON a browser sends for navigator.credentials.create(options). A `counting`
        authenticator's signature count grows with each use; the others' stays 0 (as many synced
        passkeys do)."""
        rp_id = options["rp"]["id"]
        key = ec.generate_private_key(ec.SECP256R1())
        numbers = key.public_key().public_numbers()
        cose = cbor2.dumps({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})
        credential_id = os.urandom(32)
        flags = 0x01 | (0x04 if user_verified else 0) | 0x40  # UP, UV, attested credential data
        auth_data = (
            hashlib.sha256(rp_id.encode()).digest()
            + bytes([flags])
            + struct.pack(">I", 0)
            + bytes(16)
            + struct.pack(">H", len(credential_id))
            + credential_id
            + cose
        )
        self.credentials[credential_id] = {
            "key": key,
            "rp_id": rp_id,
            "user_handle": unb64url(options["user"]["id"]),
            "count": 0,
            "counting": counting,
        }
        client_data = self._client_data("webauthn.create", options["challenge"])
        return json.dumps(
            {
                "id": b64url(credential_id),
                "rawId": b64url(credential_id),
                "type": "public-key",
                "clientExtensionResults": {},
                "authenticatorAttachment": "platform",
                "response": {
                    "clientDataJSON": b64url(client_data),
                    "transports": ["internal"],
                    "attestationObject": b64url(cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})),
                },
            }
        )

    def get(
        self,
        options: dict,
        credential_id: bytes | None = None,
        user_verified: bool = True,
        challenge: str | None = None,
        count: int | None = None,
        user_handle: bytes | None = None,
    ) -> str:
        """The JSON a browser sends for navigator.credentials.get(options), with our first (or the
        given) credential. `count` signs that signature count (a cloned authenticator's), and
        `user_handle` sends another user handle than the credential's."""
        allowed = [unb64url(c["id"]) for c in options.get("allowCredentials") or []]
        if credential_id is None:
            credential_id = next(c for c in self.credentials if not allowed or c in allowed)
        cred = self.credentials[credential_id]
        if cred["counting"]:
            cred["count"] += 1
        signed_count = cred["count"] if count is None else count
        flags = 0x01 | (0x04 if user_verified else 0)
        auth_data = hashlib.sha256(cred["rp_id"].encode()).digest() + bytes([flags]) + struct.pack(">I", signed_count)
        client_data = self._client_data("webauthn.get", challenge or options["challenge"])
        signature = cred["key"].sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return json.dumps(
            {
                "id": b64url(credential_id),
                "rawId": b64url(credential_id),
                "type": "public-key",
                "clientExtensionResults": {},
                "authenticatorAttachment": "platform",
                "response": {
                    "clientDataJSON": b64url(client_data),
                    "authenticatorData": b64url(auth_data),
                    "signature": b64url(signature),
                    "userHandle": b64url(user_handle if user_handle is not None else cred["user_handle"]),
                },
            }
        )
