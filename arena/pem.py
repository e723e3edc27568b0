"""A PEM certificate chain and private key, read with Python's ssl module as gRPC would take them:
what is wrong with a pair, for the referee's and the SDK's checks at start to say in their words.

Both check before gRPC sees the files, because gRPC given a pair it cannot use only logs raw
lines of its own (and a server then fails to bind, as if its port were taken), and OpenSSL asked
for an encrypted key prompts on the terminal for its pass phrase.
"""

from __future__ import annotations

import enum
import ssl
from pathlib import Path

NO_CERTIFICATE_BLOCK = "no -----BEGIN CERTIFICATE----- block that parses"
"""Why PEM data holds no certificate to trust, in words (OpenSSL's name the C file it failed in:
"no start line: cadata does not contain a certificate (_ssl.c:4020)")."""


def holds_certificates(pem: bytes) -> bool:
    """Whether ``pem`` holds at least one certificate that TLS can trust (a CA file's)."""
    try:
        ssl.create_default_context(cadata=pem.decode("ascii", "replace"))
    except (ssl.SSLError, ValueError):
        return False
    return True


class PairProblem(enum.Enum):
    """Why a certificate chain and private key cannot serve TLS."""

    NO_CERTIFICATE = "the certificate file holds no readable PEM certificate"
    ENCRYPTED = "the private key is encrypted with a pass phrase"
    MISMATCH = "the private key is not the certificate's"
    NO_KEY = "the key file holds no readable PEM private key"


class _EncryptedKey(Exception):
    """Raised by the pass phrase callback: the key file asked for one."""


def _no_pass_phrase() -> str:
    """OpenSSL's pass phrase callback: refuse instead of prompting on the terminal."""
    raise _EncryptedKey


def load_pair(context: ssl.SSLContext, cert: Path | str, key: Path | str) -> PairProblem | None:
    """Load the chain in ``cert`` and its key in ``key`` into ``context`` (never prompting for a
    pass phrase); what is wrong with them, or None."""
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        probe.load_verify_locations(cert)
    except (ssl.SSLError, ValueError):
        return PairProblem.NO_CERTIFICATE
    try:
        context.load_cert_chain(cert, key, password=_no_pass_phrase)
    except _EncryptedKey:
        return PairProblem.ENCRYPTED
    except (ssl.SSLError, ValueError) as e:
        # A key of another algorithm than the certificate's (an EC key beside an RSA
        # certificate) is NO_CERTIFICATE_ASSIGNED: read, but no certificate to go with it.
        if getattr(e, "reason", None) in ("KEY_VALUES_MISMATCH", "NO_CERTIFICATE_ASSIGNED"):
            return PairProblem.MISMATCH
        return PairProblem.NO_KEY
    return None
