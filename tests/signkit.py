"""Keys and certificates made for a test, as a publisher would hold them (PEM files)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class KeyFiles:
    private: Path
    public: Path


def _write_key(folder: Path, name: str) -> tuple[ec.EllipticCurvePrivateKey, KeyFiles]:
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = folder / f"{name}.pem", folder / f"{name}.pub"
    encoding, fmt = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8
    private.write_bytes(key.private_bytes(encoding, fmt, serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(encoding, serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, KeyFiles(private, public)


def key_pair(folder: Path, name: str = "release") -> KeyFiles:
    return _write_key(folder, name)[1]


@dataclass
class CertificateFiles:
    key: Path
    certificate: Path
    ca: Path


def certificate_chain(folder: Path, name: str = "publisher") -> CertificateFiles:
    """A CA and a code-signing certificate it issued for a fresh key."""
    ca_key, _ = _write_key(folder, f"{name}-ca")
    leaf_key, leaf = _write_key(folder, name)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path = folder / f"{name}-ca.crt", folder / f"{name}.crt"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return CertificateFiles(leaf.private, cert_path, ca_path)


def _usage(cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
