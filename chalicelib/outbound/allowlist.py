"""The operator's allow-list (``PAWL_ALLOW_PRIVATE_URLS``) and pawl's own endpoints.

Grammar of ``PAWL_ALLOW_PRIVATE_URLS`` (comma-separated, case-insensitive, spaces ignored):

- ``""`` (or unset): public addresses only.
- ``loopback:PORT[,PORT...]``: those ports on loopback (127.0.0.0/8, ``::1``); a bare port
  right after a ``loopback:`` entry (or another such port) continues its list, so
  ``loopback:8001,8002`` and ``loopback:8001,loopback:8002`` mean the same.
- ``loopback``: every loopback port (an explicit operator choice).
- a CIDR or a single address (``10.0.0.0/8``, ``127.0.0.1/32``, ``fd00::/8``): every address
  in it. A network that is not entirely link-local never opens link-local addresses: name
  ``169.254.0.0/16`` (or a part of it) to reach them.
- ``all``: every private and loopback address (``0.0.0.0/0,::/0``): link-local still needs
  its own entry.

Instance-metadata addresses are reached only when named exactly (``169.254.169.254``);
unspecified addresses (0.0.0.0/8, ``::``) never; and pawl's own endpoints (the stand-in,
the API, whatever the runtime binds: ``AWS_ENDPOINT_URL`` and ``PAWL_RESERVED_ENDPOINTS``)
never, whatever the list says. An entry that does not parse makes the whole value invalid:
the policy is then "public only" (fail closed) and :attr:`OutboundPolicy.error` says why.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, replace
from functools import lru_cache

import httpx

from chalicelib.outbound.addresses import (
    METADATA_ADDRESSES,
    IPAddress,
    IPNetwork,
    address_category,
    normalize,
    resolve,
)
from chalicelib.settings import get_settings

log = logging.getLogger("pawl.outbound")

_EVERYTHING = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))


@dataclass(frozen=True)
class OutboundPolicy:
    """What outbound calls may reach besides public addresses (see the module docstring)."""

    any_loopback: bool = False
    loopback_ports: frozenset[int] = frozenset()
    networks: tuple[IPNetwork, ...] = ()
    metadata: frozenset[IPAddress] = frozenset()
    #: Ports of pawl's own endpoints: refused on every address that is not public.
    reserved_ports: frozenset[int] = frozenset()
    #: Public address:port pairs of pawl's own endpoints (an endpoint on a public address).
    reserved_pairs: frozenset[tuple[IPAddress, int]] = frozenset()
    #: Why ``PAWL_ALLOW_PRIVATE_URLS`` was not understood (None: it was).
    error: str | None = None

    def is_reserved(self, ip: IPAddress, port: int) -> bool:
        if (normalize(ip), port) in self.reserved_pairs:
            return True
        return port in self.reserved_ports and address_category(ip) != "public"


class InvalidAllowList(ValueError):
    """``PAWL_ALLOW_PRIVATE_URLS`` has an entry the grammar does not know."""


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise InvalidAllowList(f"{entry!r}: the port must be a number from 1 to 65535")
    return int(text)


def _network(entry: str) -> IPNetwork:
    try:
        return ipaddress.ip_network(entry, strict=True)
    except ValueError as exc:
        raise InvalidAllowList(
            f"{entry!r} is not loopback, loopback:PORT, all, an address or a CIDR ({exc})"
        ) from None


def parse_allow_list(raw: str) -> OutboundPolicy:
    """The allow-list part of the policy; raises :class:`InvalidAllowList`."""
    any_loopback = False
    ports: set[int] = set()
    networks: list[IPNetwork] = []
    metadata: set[IPAddress] = set()
    listing_ports = False  # a bare number continues the ports of a ``loopback:`` entry
    for entry in (part.strip().lower() for part in raw.split(",")):
        if not entry:
            continue
        continues_ports = listing_ports and entry.isdigit()
        listing_ports = entry.startswith("loopback:") or continues_ports
        if continues_ports:
            ports.add(_port(entry, f"loopback:{entry}"))
        elif entry == "loopback":
            any_loopback = True
        elif entry.startswith("loopback:"):
            ports.add(_port(entry.removeprefix("loopback:"), entry))
        elif entry == "all":
            networks.extend(_EVERYTHING)
        else:
            network = _network(entry)
            if network.num_addresses == 1 and normalize(network[0]) in METADATA_ADDRESSES:
                metadata.add(normalize(network[0]))
            else:
                networks.append(network)
    return OutboundPolicy(
        any_loopback=any_loopback,
        loopback_ports=frozenset(ports),
        networks=tuple(networks),
        metadata=frozenset(metadata),
    )


def _endpoint_addresses(host: str, port: int) -> list[IPAddress]:
    try:
        return [normalize(ip) for ip in resolve(host, port)]
    except (OSError, UnicodeError):
        return []


def target_port(url: httpx.URL) -> int:
    """The port ``url`` connects to (httpx leaves a scheme's default port out)."""
    return url.port or (443 if url.scheme == "https" else 80)


def _endpoint(entry: str) -> tuple[str, int] | None:
    """(host, port) of ``http://host:port``, ``host:port`` or ``[v6]:port``; None if neither."""
    text = entry if "://" in entry else f"http://{entry}"
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, TypeError):
        return None
    return (url.host, target_port(url)) if url.host else None


def reserved_endpoints(
    entries: list[str],
) -> tuple[frozenset[int], frozenset[tuple[IPAddress, int]]]:
    """Ports refused on non-public addresses, and public (address, port) pairs refused."""
    ports: set[int] = set()
    pairs: set[tuple[IPAddress, int]] = set()
    for entry in entries:
        parsed = _endpoint(entry.strip())
        if parsed is None:
            log.warning("PAWL_RESERVED_ENDPOINTS: %r is not host:port or a URL, ignored", entry)
            continue
        host, port = parsed
        addresses = _endpoint_addresses(host, port)
        if host == "localhost" or not addresses:
            ports.add(port)  # unresolvable now: assume it is local, the safe side
        for ip in addresses:
            if address_category(ip) == "public":
                pairs.add((ip, port))
            else:
                ports.add(port)
    return frozenset(ports), frozenset(pairs)


@lru_cache(maxsize=8)
def build_policy(allow_list: str, reserved: str, aws_endpoint_url: str | None) -> OutboundPolicy:
    """The policy for these settings; an invalid allow-list gives "public only" and an error."""
    try:
        policy = parse_allow_list(allow_list)
    except InvalidAllowList as exc:
        error = f"PAWL_ALLOW_PRIVATE_URLS is not valid, only public addresses are allowed: {exc}"
        log.error("%s", error)
        policy = OutboundPolicy(error=error)
    entries = [e for e in reserved.split(",") if e.strip()]
    if aws_endpoint_url:
        entries.append(aws_endpoint_url)
    ports, pairs = reserved_endpoints(entries)
    return replace(policy, reserved_ports=ports, reserved_pairs=pairs)


def current_policy() -> OutboundPolicy:
    """The policy the current settings describe (cached per distinct settings)."""
    settings = get_settings()
    return build_policy(
        settings.allow_private_urls, settings.reserved_endpoints, settings.aws_endpoint_url
    )


def validate_allow_list(raw: str) -> None:
    """Raise :class:`InvalidAllowList` (a clear startup error) if ``raw`` does not parse."""
    parse_allow_list(raw)
