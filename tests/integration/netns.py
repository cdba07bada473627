"""Hosts on their own addresses, on this machine: a network namespace per host, each joined by a
veth pair to one bridge in this namespace, whose address is this host's (the driver's and the
broker's). Every host reaches every other by address and nothing else: its own loopback is its
own. Needs root and iproute2 (`ip`), as CI has.

    this namespace ── bridge 10.N.M.1 ─┬─ veth ── namespace "master"   10.N.M.10
                                       ├─ veth ── namespace "worker-a" 10.N.M.11
                                       └─ veth ── namespace "worker-b" 10.N.M.12
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class Hosts:
    here: str  # this namespace's address on the bridge
    addresses: dict[str, str]  # host name -> its address
    namespaces: dict[str, str]  # host name -> its namespace

    def command(self, host: str, args: list[str]) -> list[str]:
        """`args` run in `host`'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[host], *args]


def unavailable() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2's `ip`"
    return None


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@contextmanager
def hosts(names: list[str]) -> Iterator[Hosts]:
    """A namespace per name on a fresh bridge and subnet (random: runs side by side do not clash);
    all removed on the way out."""
    tag = f"{random.randrange(16 ** 4):04x}"
    subnet = f"10.{random.randrange(100, 250)}.{random.randrange(1, 250)}"
    bridge, made = f"sjb{tag}", []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{subnet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        namespaces, addresses = {}, {}
        for n, name in enumerate(names):
            namespace, veth, address = f"sj-{tag}-{n}", f"sj{tag}v{n}", f"{subnet}.{10 + n}"
            _ip("netns", "add", namespace)
            made.append(namespace)
            _ip("link", "add", veth, "type", "veth", "peer", "name", f"{veth}p")
            _ip("link", "set", veth, "master", bridge)
            _ip("link", "set", veth, "up")
            _ip("link", "set", f"{veth}p", "netns", namespace)
            for args in (("addr", "add", f"{address}/24", "dev", f"{veth}p"), ("link", "set", f"{veth}p", "up"),
                         ("link", "set", "lo", "up"), ("route", "add", "default", "via", f"{subnet}.1")):
                _ip("-n", namespace, *args)
            namespaces[name], addresses[name] = namespace, address
        yield Hosts(f"{subnet}.1", addresses, namespaces)
    finally:
        for namespace in made:  # its end of each veth pair goes with it, and so the pair
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)
