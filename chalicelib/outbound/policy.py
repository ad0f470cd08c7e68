"""The SSRF policy: which address:port an outbound call may reach (see docs/security.md).

Decisions over addresses (:mod:`chalicelib.outbound.addresses` classifies them, the
operator's allow-list and pawl's own endpoints come from :mod:`chalicelib.outbound.allowlist`),
applied to what DNS resolves a host to. The same decision is made at config time
(:func:`check_url`) and when connecting (the client's vetting backend), so a name that
resolves differently later (DNS rebinding) is caught where it matters.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable

import httpx

from chalicelib.outbound.addresses import (
    METADATA_HOSTNAMES,
    IPAddress,
    address_category,
    is_link_local_network,
    normalize,
    resolve,
    socket_address,
)
from chalicelib.outbound.allowlist import OutboundPolicy, current_policy, target_port
from chalicelib.outbound.errors import OutboundRefused

#: The refusal for pawl's own endpoints: it names neither the address nor the port.
OWN_ENDPOINT_MESSAGE = "refused to call this URL: it is pawl's own endpoint"
_HINT = "an operator can allow it with PAWL_ALLOW_PRIVATE_URLS"


def _in_networks(ip: IPAddress, policy: OutboundPolicy, category: str) -> bool:
    candidates = {ip, normalize(ip)}
    for network in policy.networks:
        if category == "link-local" and not is_link_local_network(network):
            continue  # a wide network (all, 0.0.0.0/0) never opens link-local
        if any(c.version == network.version and c in network for c in candidates):
            return True
    return False


def category_allowed(ip: IPAddress, port: int, policy: OutboundPolicy) -> bool:
    """Whether the allow-list admits ``ip:port`` (pawl's own endpoints aside)."""
    category = address_category(ip)
    if category == "public":
        return True
    if category == "unspecified":
        return False
    if category == "metadata":
        return normalize(ip) in policy.metadata
    if category == "loopback" and (policy.any_loopback or port in policy.loopback_ports):
        return True
    return _in_networks(ip, policy, category)


def _refusal(host: str, ip: IPAddress, category: str) -> OutboundRefused:
    shown = host if host == str(ip) else f"{host} ({ip})"
    if category in {"metadata", "unspecified"}:
        return OutboundRefused(f"refused to call {shown}: {category} addresses are not allowed")
    return OutboundRefused(
        f"refused to call {shown}: {category} addresses are not allowed ({_HINT})"
    )


def check_address(host: str, ip: IPAddress, port: int, policy: OutboundPolicy) -> None:
    """Raise :class:`OutboundRefused` unless ``ip:port`` may be called.

    The allow-list is asked first, so a port the caller could not reach anyway is refused
    like any other: the "own endpoint" answer tells nothing to someone probing ports.
    """
    if not category_allowed(ip, port, policy):
        raise _refusal(host, ip, address_category(ip))
    if policy.is_reserved(ip, port):
        raise OutboundRefused(OWN_ENDPOINT_MESSAGE)


def check_addresses(
    host: str, addresses: Iterable[IPAddress], port: int, policy: OutboundPolicy
) -> None:
    for ip in addresses:
        check_address(host, ip, port, policy)


def connection_refusal(
    local: IPAddress, peer: IPAddress, port: int, policy: OutboundPolicy
) -> OutboundRefused | None:
    """Why a made connection must not be used, or None.

    A connection whose two ends have the same address went to one of this host's own
    addresses (a public one too, when pawl binds 0.0.0.0): it is judged as loopback.
    """
    if normalize(local) != normalize(peer) or address_category(peer) != "public":
        return None  # another host, or an address already judged by its own category
    if not category_allowed(ipaddress.ip_address("127.0.0.1"), port, policy):
        return OutboundRefused(f"refused to call {peer}: it is this host ({_HINT})")
    if port in policy.reserved_ports:
        return OutboundRefused(OWN_ENDPOINT_MESSAGE)
    return None


def check_connected(sock: socket.socket | None, port: int, policy: OutboundPolicy) -> None:
    """Raise :class:`OutboundRefused` if ``sock`` reached this host where it may not."""
    if sock is None:
        return
    try:
        local = socket_address(str(sock.getsockname()[0]))
        peer = socket_address(str(sock.getpeername()[0]))
    except (OSError, ValueError, IndexError):
        return
    refusal = connection_refusal(local, peer, port, policy)
    if refusal is not None:
        raise refusal


def _literal_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def parse_target(url: str, policy: OutboundPolicy) -> httpx.URL:
    """Refusals that need no DNS: bad URL, scheme, metadata host names, literal addresses."""
    try:
        target = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise OutboundRefused(f"not a valid URL: {exc}") from None
    if target.scheme not in {"http", "https"}:
        raise OutboundRefused(f"only http and https URLs are allowed, not {target.scheme!r}")
    host = target.host.rstrip(".").lower()
    if not host:
        raise OutboundRefused("the URL has no host")
    if host in METADATA_HOSTNAMES and not policy.metadata:
        raise OutboundRefused(f"refused to call {host}: a cloud metadata service")
    literal = _literal_ip(host)
    if literal is not None:
        check_address(host, literal, target_port(target), policy)
    return target


def safe_url(url: httpx.URL | str) -> str:
    """scheme://host[:port]/path: what may appear in logs and messages (no query, no userinfo)."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "<invalid url>"
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path}"


def check_url(url: str) -> None:
    """Raise :class:`OutboundRefused` if the policy refuses ``url`` (call it at config time).

    A host that resolves now is checked against every address it resolves to; a host that
    does not resolve yet is accepted here: the check made when connecting is the guarantee.
    """
    policy = current_policy()
    target = parse_target(url, policy)
    if _literal_ip(target.host) is not None:
        return
    port = target_port(target)
    try:
        addresses = resolve(target.host, port)
    except (OSError, UnicodeError):
        return
    check_addresses(target.host, addresses, port, policy)
