"""The registry service's kinds without starting one: the kind read from the environment, each
kind's URL (Apicurio's Confluent-compatible API under its path), and the one line a failed
Apicurio build is reported with."""

from __future__ import annotations

import pytest

from streamjoin.registry import apicurio
from streamjoin.registry.service import RegistryState
from streamjoin.settings import RegistryKind, Settings


@pytest.mark.parametrize("value, kind", [(None, RegistryKind.STREAMJOIN), ("apicurio", RegistryKind.APICURIO),
                                         ("Streamjoin", RegistryKind.STREAMJOIN)])
def test_the_registry_kind_comes_from_the_environment(value, kind):
    env = {} if value is None else {"STREAMJOIN_REGISTRY_KIND": value}
    assert Settings.from_env(env).registry_kind is kind


def test_an_unknown_registry_kind_is_a_one_line_error_naming_the_choices():
    with pytest.raises(ValueError, match="STREAMJOIN_REGISTRY_KIND='karapace' is not one of: streamjoin, apicurio"):
        Settings.from_env({"STREAMJOIN_REGISTRY_KIND": "karapace"})


@pytest.mark.parametrize("kind, url", [(RegistryKind.STREAMJOIN, "http://127.0.0.1:8081"),
                                       (RegistryKind.APICURIO, "http://127.0.0.1:8081/apis/ccompat/v7")])
def test_each_kind_has_its_url(kind, url):
    assert RegistryState(1, 8081, "log", kind).url == url


@pytest.mark.parametrize("output, reason", [
    ("[ERROR] Failed to execute goal on project x: Could not resolve dependencies: "
     "io.apicurio:apicurio-registry-app:jar:2.4.2.Final was not found\n[ERROR] \n[ERROR] Re-run Maven",
     "Failed to execute goal on project x: Could not resolve dependencies: "
     "io.apicurio:apicurio-registry-app:jar:2.4.2.Final was not found"),
    ("Unknown host\n", "Unknown host"),
    ("", "Maven gave no reason"),
])
def test_a_failed_build_is_told_by_mavens_first_error(output, reason):
    assert apicurio._reason(output) == reason


def test_the_build_project_ships_beside_the_module():
    assert (apicurio.PROJECT / "pom.xml").exists() and (apicurio.PROJECT / "settings.xml").exists()
    assert apicurio.runner_jar().is_relative_to(apicurio.build_dir())
