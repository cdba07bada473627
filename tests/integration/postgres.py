"""A PostgreSQL server of the test's own: a new cluster (initdb) in a temporary folder, on a free
loopback port, password-protected, started with pg_ctl and removed afterwards. The server
binaries are Debian's (`make test` installs the `postgresql` package when they are missing). As
root, the server runs as the `postgres` user Debian's package creates (PostgreSQL refuses to
run as root)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

USER, PASSWORD = "streamjoin", "lookup-secret"


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    password: str

    def jdbc_url(self, database: str) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}"

    def connect(self, database: str = "postgres"):
        import psycopg

        return psycopg.connect(host=self.host, port=self.port, dbname=database, user=self.user,
                               password=self.password, autocommit=True)


def server_binaries() -> Path | None:
    """The folder of initdb and pg_ctl: Debian's newest installed version."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """Raises RuntimeError with one line when the server cannot be had."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("PostgreSQL's server is not installed: `make test` installs it "
                           "(apt-get install postgresql, as root)")
    folder = Path(tempfile.mkdtemp(prefix="streamjoin-pg-"))
    data, port = folder / "data", _free_port()
    (folder / "pw").write_text(PASSWORD)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(folder / "pw", "postgres")
    try:
        _run(_as_server_user([str(binaries / "initdb"), "-D", str(data), "-U", USER, f"--pwfile={folder / 'pw'}",
                              "--auth=scram-sha-256", "-E", "UTF8"]))
        options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={folder}"
        _run(_as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-o", options,
                              "-w", "-t", "60", "start"]))
        try:
            yield Postgres("127.0.0.1", port, USER, PASSWORD)
        finally:
            subprocess.run(_as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
                           capture_output=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        last = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(f"{Path(command[command.index('--') + 1] if '--' in command else command[0]).name} "
                           f"failed: {last[-1] if last else done.returncode}")
