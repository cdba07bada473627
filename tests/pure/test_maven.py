"""streamjoin.maven without a network: a resolved artifact is read from its classpath file in the
cache (no JVM, no registry); a listing whose jars are gone is fetched again; Ivy's output is cut
to the one line that says why a fetch failed."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from streamjoin import maven

ARTIFACT = maven.Artifact("org.example", "thing_2.13", "1.2.3")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMJOIN_JAR_CACHE", str(tmp_path))
    return tmp_path


def listed(cache, names: list[str], create: bool) -> list:
    jars = [cache / "ivy" / name for name in names]
    for jar in jars if create else []:
        jar.parent.mkdir(parents=True, exist_ok=True)
        jar.write_bytes(b"PK")
    listing = cache / "classpaths" / "org.example__thing_2.13__1.2.3.txt"
    listing.parent.mkdir(parents=True, exist_ok=True)
    listing.write_text(os.pathsep.join(map(str, jars)) + "\n")  # Ivy ends the file with a newline
    return jars


def test_a_resolved_artifact_is_read_from_the_cache(cache, monkeypatch):
    jars = listed(cache, ["a.jar", "b.jar"], create=True)
    monkeypatch.setattr(maven, "_fetch", lambda *_: pytest.fail("fetched although cached"))
    assert maven.resolve(ARTIFACT) == jars


def test_a_listing_whose_jars_are_gone_is_fetched_again(cache, monkeypatch):
    listed(cache, ["a.jar"], create=False)
    fetched = []
    monkeypatch.setattr(maven, "_fetch", lambda artifact, listing: fetched.append(artifact) or [])
    maven.resolve(ARTIFACT)
    assert fetched == [ARTIFACT]


def test_the_cache_is_named_by_the_environment(cache):
    assert maven.cache_dir() == cache
    assert str(ARTIFACT) == "org.example:thing_2.13:1.2.3"


@dataclass
class Case:
    output: str
    expected: str


@pytest.mark.parametrize("case", [
    Case(":: resolving dependencies ::\n\t:: UNRESOLVED DEPENDENCIES ::\n\t:: org.example#thing;1.2.3: not found\n",
         "unresolved dependency org.example#thing;1.2.3: not found"),
    Case("Exception in thread main java.net.UnknownHostException: repo\n", "Exception in thread main java.net.UnknownHostException: repo"),
    Case("", "Ivy gave no reason"),
], ids=["unresolved", "network", "silent"])
def test_a_failed_fetch_is_told_in_one_line(case):
    assert maven._reason(case.output) == case.expected
