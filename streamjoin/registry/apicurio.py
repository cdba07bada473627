"""Apicurio Registry, built from Maven Central on first use, run as the project's schema registry.

Maven Central publishes Apicurio Registry's application jar (`io.apicurio:apicurio-registry-app`)
but not the runnable form Quarkus makes of it. `build()` makes that here: Maven runs Quarkus'
`build` goal on a small project (`apicurio/pom.xml`) whose only dependency is the application,
which re-augments it into a runner jar and its lib/ under the jar cache (`STREAMJOIN_JAR_CACHE`,
see streamjoin.maven): once per machine, ~3-5 min cold (mostly downloads), then ~40 s if only the
build output is gone. Maven's local repository is in the jar cache too. The registry keeps its
schemas in memory (H2: a restart forgets them); its Confluent-compatible API is at
`/apis/ccompat/v7`. Started in ~10-15 s, ~200 MB resident.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from streamjoin import maven

VERSION = "2.4.2.Final"
PROJECT = Path(__file__).with_name("apicurio")
MARKER = b"streamjoin.registry.apicurio"  # on the JVM's command line: how a state file's PID is known as ours
CCOMPAT_PATH = "/apis/ccompat/v7"
BUILD_TIMEOUT_S = 1800.0
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k", "-Xmx256m")


def build_dir() -> Path:
    return maven.cache_dir() / f"apicurio-registry-{VERSION}"


def runner_jar() -> Path:
    return build_dir() / "streamjoin-apicurio-registry-1-runner.jar"  # Apicurio's build settings ask for a legacy jar


def build() -> Path:
    """The runnable registry, built on first use (one line on stderr says so, with its time)."""
    if runner_jar().exists():
        return runner_jar()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise maven.FetchError("building Apicurio Registry needs Apache Maven (`mvn`) on PATH: apt-get install maven")
    command = [mvn, "-B", "-q", "-s", str(PROJECT / "settings.xml"), "-f", str(PROJECT / "pom.xml"),
               f"-Dmaven.repo.local={maven.cache_dir() / 'm2'}", f"-Dstreamjoin.build.dir={build_dir()}",
               "-DskipTests", "package"]
    print(f"streamjoin: fetching io.apicurio:apicurio-registry-app:{VERSION} and Quarkus from Maven Central and "
          f"building it into {build_dir()} (first use only)", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                              env=_java_env())
    except subprocess.TimeoutExpired:
        raise maven.FetchError(f"building Apicurio Registry {VERSION} timed out after {BUILD_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0 or not runner_jar().exists():
        raise maven.FetchError(f"cannot build Apicurio Registry {VERSION} from Maven Central: "
                               f"{_reason(done.stdout + done.stderr)}")
    print(f"streamjoin: built Apicurio Registry {VERSION} in {time.monotonic() - started:.1f} s",
          file=sys.stderr, flush=True)
    return runner_jar()


def _java_env() -> dict[str, str]:
    """Maven runs on the Java the project runs (JAVA_HOME, else the `java` on PATH)."""
    env = dict(os.environ)
    env.setdefault("JAVA_HOME", str(Path(maven.java_binary()).resolve().parent.parent))
    return env


def _reason(output: str) -> str:
    """Maven's telling line: the first [ERROR], which names what could not be fetched or built."""
    errors = [line.replace("[ERROR]", "").strip() for line in output.splitlines() if line.startswith("[ERROR]")]
    errors = [line for line in errors if line]
    return (errors or [line for line in output.splitlines() if line.strip()] or ["Maven gave no reason"])[0][:400]


def command(port: int) -> list[str]:
    """The registry's JVM, listening on 127.0.0.1:`port` (built first if need be)."""
    jar = build()
    return [maven.java_binary(), *JVM_OPTIONS, f"-D{MARKER.decode()}=true",
            f"-Dquarkus.http.port={port}", "-Dquarkus.http.host=127.0.0.1",
            "-Dquarkus.log.console.format=%d{HH:mm:ss} %-5p [%c{2.}] %s%e%n", "-jar", str(jar)]
