"""A self-signed TLS certificate for a broker on loopback, made with the JDK's `keytool` (Java 17
is a requirement already; no Python crypto package needed): the broker's PKCS12 keystore
(`kraft.Keystore`), and the certificate as PEM, which every client trusts as its CA: librdkafka's
`ssl.ca.location`, kafka-python's `ssl_cafile`, and Java clients (Spark's own Kafka connector) as
a PEM truststore. For tests and local trials; a real cluster's certificates come from its CA."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from streamjoin import maven
from streamjoin.kafka.kraft import Keystore


@dataclass(frozen=True)
class Certificate:
    keystore: Keystore  # the broker's key and certificate
    ca_pem: Path  # what clients trust


def keytool() -> str:
    """The keytool beside the java binary streamjoin runs."""
    tool = Path(maven.java_binary()).resolve().parent / "keytool"
    if not tool.exists():
        raise FileNotFoundError(f"keytool not found beside {maven.java_binary()}: streamjoin needs a Java 17 JDK or JRE")
    return str(tool)


def make_certificate(directory: Path, host: str = "127.0.0.1", days: int = 30) -> Certificate:
    """A new key pair and self-signed certificate for `host` (its IP address or DNS name in the
    subject alternative names, so clients verifying the host name accept it), written to
    `directory`/broker.p12 (with a random password) and `directory`/ca.pem."""
    directory.mkdir(parents=True, exist_ok=True)
    keystore = Keystore(directory / "broker.p12", secrets.token_urlsafe(18))
    san = f"ip:{host}" if host.replace(".", "").isdigit() else f"dns:{host}"
    ca_pem = directory / "ca.pem"
    for path in (keystore.path, ca_pem):
        path.unlink(missing_ok=True)
    _keytool("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-validity", str(days),
             "-dname", f"CN={host}", "-ext", f"san={san}", "-ext", "bc:c",
             "-keystore", str(keystore.path), "-storetype", "PKCS12", "-storepass", keystore.password)
    _keytool("-exportcert", "-rfc", "-alias", "broker", "-file", str(ca_pem),
             "-keystore", str(keystore.path), "-storetype", "PKCS12", "-storepass", keystore.password)
    keystore.path.chmod(0o600)
    return Certificate(keystore, ca_pem)


def _keytool(*args: str) -> None:
    done = subprocess.run([keytool(), *args], capture_output=True, text=True, timeout=120)
    if done.returncode:  # said without the command line, which holds the keystore's password
        raise RuntimeError(f"keytool {args[0]} failed: {done.stdout.strip() or done.stderr.strip()}")
