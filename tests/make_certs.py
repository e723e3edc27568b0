"""Test certificates made with the openssl tool (a test that needs one skips where openssl is
missing): self-signed, signed by a test CA, or valid only between two dates."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HOSTS = "DNS:localhost,IP:127.0.0.1"
"""What the certificates are made out for, unless told otherwise: the tests' loopback."""
KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
"""A new P-256 key, not encrypted (quick to make)."""


def openssl(folder: Path, *args: str) -> None:
    """Run the openssl tool in ``folder`` (skip the test where it is missing)."""
    tool = shutil.which("openssl")
    if tool is None:
        pytest.skip("the openssl command is needed to make test certificates")
    subprocess.run([tool, *args], cwd=folder, check=True, capture_output=True)


def self_signed(folder: Path, name: str, hosts: str = HOSTS) -> Path:
    """``NAME.pem``, self-signed for ``hosts``, and its key ``NAME.key``; the certificate."""
    subject = ("-subj", f"/CN={name}", "-addext", f"subjectAltName={hosts}", "-days", "2")
    openssl(folder, "req", "-x509", *KEY, "-keyout", f"{name}.key", "-out", f"{name}.pem", *subject)
    return folder / f"{name}.pem"


def request(folder: Path, name: str) -> None:
    """A new key ``NAME.key`` and its certificate request ``NAME.csr``."""
    subject = ("-subj", f"/CN={name}")
    openssl(folder, "req", *KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr", *subject)


def signed(folder: Path, name: str, ca: str) -> Path:
    """``NAME.pem`` (for :data:`HOSTS`) and ``NAME.key``, signed by ``CA.pem``; the certificate."""
    request(folder, name)
    (folder / "hosts.ext").write_text(f"subjectAltName={HOSTS}\n")
    openssl(
        folder,
        *("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key"),
        *("-CAcreateserial", "-days", "2", "-extfile", "hosts.ext", "-out", f"{name}.pem"),
    )
    return folder / f"{name}.pem"


def dated(folder: Path, name: str, start: str, end: str, hosts: str = HOSTS) -> Path:
    """A self-signed ``NAME.pem``/``NAME.key`` valid only from ``start`` to ``end`` (openssl's
    YYYYMMDDHHMMSSZ); the certificate. `openssl x509` of OpenSSL 3.0 cannot backdate a
    certificate, `openssl ca` can."""
    ca = folder / f"{name}-ca"
    ca.mkdir()
    (ca / "index.txt").write_text("")
    (ca / "serial").write_text("1000\n")
    (ca / "ca.cnf").write_text(
        f"[ca]\ndefault_ca = d\n[d]\ndir = {ca}\ndatabase = $dir/index.txt\n"
        "new_certs_dir = $dir\nserial = $dir/serial\ndefault_md = sha256\npolicy = p\n"
        f"x509_extensions = e\n[p]\ncommonName = supplied\n[e]\nsubjectAltName = {hosts}\n"
    )
    request(folder, name)
    openssl(
        folder,
        *("ca", "-batch", "-selfsign", "-config", str(ca / "ca.cnf"), "-keyfile", f"{name}.key"),
        *("-in", f"{name}.csr", "-out", f"{name}.pem", "-startdate", start, "-enddate", end),
    )
    return folder / f"{name}.pem"


def mutual_tls(folder: Path) -> Path:
    """``folder`` with what the mutual-TLS tests use: ``ca`` signed ``server`` and ``client``;
    ``stranger`` is a client certificate of ``other-ca``; ``locked.key`` is client.key under
    the pass phrase ``secret``."""
    for ca in ("ca", "other-ca"):
        self_signed(folder, ca)
    signed(folder, "server", "ca")
    signed(folder, "client", "ca")
    signed(folder, "stranger", "other-ca")
    locked = ("-aes256", "-passout", "pass:secret", "-out", "locked.key")
    openssl(folder, "pkey", "-in", "client.key", *locked)
    return folder
