"""The SSRF policy: which addresses an outbound call may reach (see docs/decisions.md).

Pure functions over addresses, plus the DNS resolution they are applied to.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable

import httpx

from chalicelib.outbound.errors import OutboundRefused
from chalicelib.settings import get_settings

# Addresses of instance-metadata services (AWS IMDS v4/v6 and ECS, Alibaba); the link-local
# ones are refused as link-local anyway, naming them gives a clearer refusal.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
_METADATA_HOSTNAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata.azure.internal", "instance-data"}
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _embedded_ipv4(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), else ``ip`` itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def address_category(ip: IPAddress) -> str:
    """public | loopback | private | link-local | metadata | unspecified."""
    ip = _embedded_ipv4(ip)
    if ip in _METADATA_ADDRESSES:
        return "metadata"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if not ip.is_global or ip.is_multicast:
        return "private"
    return "public"


def normalized_policy(raw: str) -> str:
    """The effective policy; an unknown value means the strictest (fail closed)."""
    return raw if raw in {"loopback", "all"} else ""


def category_allowed(category: str, policy: str) -> bool:
    if category == "public" or policy == "all":
        return True
    return category == "loopback" and policy == "loopback"


def _refusal(host: str, ip: IPAddress, category: str) -> OutboundRefused:
    shown = host if host == str(ip) else f"{host} ({ip})"
    needed = "loopback" if category == "loopback" else "all"
    return OutboundRefused(
        f"refused to call {shown}: {category} addresses are not allowed "
        f"(PAWL_ALLOW_PRIVATE_URLS={needed} would allow them)"
    )


def check_addresses(host: str, addresses: Iterable[IPAddress], policy: str) -> None:
    for ip in addresses:
        category = address_category(ip)
        if not category_allowed(category, policy):
            raise _refusal(host, ip, category)


def _literal_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def parse_target(url: str, policy: str) -> httpx.URL:
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
    if host in _METADATA_HOSTNAMES and policy != "all":
        raise OutboundRefused(f"refused to call {host}: a cloud metadata service")
    literal = _literal_ip(host)
    if literal is not None:
        check_addresses(host, [literal], policy)
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


def resolve(host: str, port: int) -> list[IPAddress]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    unique: dict[IPAddress, None] = {}
    for *_, sockaddr in infos:
        # Strip an IPv6 zone id ("fe80::1%eth0") before parsing.
        unique[ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])] = None
    return list(unique)


def check_url(url: str) -> None:
    """Raise :class:`OutboundRefused` if the policy refuses ``url`` (call it at config time).

    A host that resolves now is checked against every address it resolves to; a host that
    does not resolve yet is accepted here: the check made when connecting is the guarantee.
    """
    policy = normalized_policy(get_settings().allow_private_urls)
    target = parse_target(url, policy)
    if _literal_ip(target.host) is not None:
        return
    try:
        addresses = resolve(target.host, target.port or 443)
    except (OSError, UnicodeError):
        return
    check_addresses(target.host, addresses, policy)
