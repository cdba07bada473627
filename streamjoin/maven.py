"""Jars from Maven Central, fetched once into a cache the project names.

The JVM parts streamjoin runs (Apache Kafka's broker, Spark's Kafka connector, delta-spark) come
from Maven Central, resolved with their dependencies by Apache Ivy: the Ivy jar pyspark ships
(`pyspark/jars/ivy-*.jar`), run with this machine's Java, the same resolver Spark uses for
`spark.jars.packages`. Why not `spark.jars.packages` itself: the broker is no Spark application,
and a session that resolves its packages at every start pays Ivy's ~10 s each time; here a
resolved artifact is a classpath file in the cache, read in microseconds on every later start.

The cache: `STREAMJOIN_JAR_CACHE`, else `~/.cache/streamjoin/maven` (shared by every checkout on
the machine, so a fresh clone fetches nothing that an earlier one fetched).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RESOLVE_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Artifact:
    group: str
    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.group}:{self.name}:{self.version}"


class FetchError(RuntimeError):
    """An artifact could not be fetched or resolved; the message is one line."""


def cache_dir() -> Path:
    configured = os.environ.get("STREAMJOIN_JAR_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "streamjoin" / "maven"


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise FetchError("no Java found (JAVA_HOME unset and no `java` on PATH): streamjoin needs Java 17")
    return java


def _ivy_jar() -> Path:
    """The Ivy that pyspark ships; located without importing pyspark."""
    spec = importlib.util.find_spec("pyspark")
    jars = Path(spec.origin).parent / "jars" if spec and spec.origin else None
    found = sorted(jars.glob("ivy-*.jar")) if jars else []
    if not found:
        raise FetchError("the pyspark package's Ivy jar (pyspark/jars/ivy-*.jar) is missing: reinstall pyspark")
    return found[-1]


def _classpath_file(artifact: Artifact) -> Path:
    return cache_dir() / "classpaths" / f"{artifact.group}__{artifact.name}__{artifact.version}.txt"


def resolve(artifact: Artifact) -> list[Path]:
    """The jars of `artifact` and its runtime dependencies, fetched on first use."""
    listing = _classpath_file(artifact)
    jars = _listed(listing) if listing.exists() else []
    if jars and all(jar.exists() for jar in jars):
        return jars
    return _fetch(artifact, listing)


def _listed(listing: Path) -> list[Path]:
    return [Path(entry) for entry in listing.read_text().strip().split(os.pathsep) if entry]


def _fetch(artifact: Artifact, listing: Path) -> list[Path]:
    listing.parent.mkdir(parents=True, exist_ok=True)
    partial = listing.with_suffix(".partial")
    command = [java_binary(), "-jar", str(_ivy_jar()), "-dependency", artifact.group, artifact.name, artifact.version,
               "-confs", "default", "-cache", str(cache_dir() / "ivy"), "-cachepath", str(partial)]
    print(f"streamjoin: fetching {artifact} and its dependencies from Maven Central into {cache_dir()} "
          "(first use only)", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise FetchError(f"fetching {artifact} from Maven Central timed out after {RESOLVE_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0 or not partial.exists():
        raise FetchError(f"cannot fetch {artifact} from Maven Central: {_reason(done.stdout + done.stderr)}")
    jars = _listed(partial)
    missing = [jar for jar in jars if not jar.exists()]
    if not jars or missing:
        raise FetchError(f"resolving {artifact} left {len(missing)} of {len(jars)} jars missing in {cache_dir()}")
    partial.replace(listing)
    print(f"streamjoin: fetched {artifact} in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    return jars


def _reason(output: str) -> str:
    """Ivy's one telling line: the unresolved dependency, else the last error or exception."""
    lines = [line.strip(" \t:") for line in output.splitlines()]
    lines = [line for line in lines if line]
    for at, line in enumerate(lines[:-1]):
        if "UNRESOLVED DEPENDENCIES" in line:
            return f"unresolved dependency {lines[at + 1]}"[:300]
    telling = [line for line in lines if any(word in line for word in ("Exception", "ERROR", "FAILED"))]
    return (telling or lines or ["Ivy gave no reason"])[-1][:300]
