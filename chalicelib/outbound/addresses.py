"""What an address is: every IPv6 spelling of an IPv4 address is judged as that IPv4 address.

Pure functions, and :func:`resolve`, the one DNS lookup. :func:`address_category` is the one
classification the SSRF policy (:mod:`chalicelib.outbound.policy`) applies, at config time
and when connecting.
"""

from __future__ import annotations

import ipaddress
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Instance-metadata services: AWS IMDS (v4, v6) and ECS/EKS credential endpoints, Alibaba,
#: Azure's wire server. The link-local ones would be refused as link-local anyway; naming
#: them gives a clearer refusal and keeps them shut when an operator opens link-local.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.170.23",
        "fd00:ec2::254",
        "fd00:ec2::23",
        "100.100.100.200",
        "168.63.129.16",
    )
)
METADATA_HOSTNAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata.azure.internal", "instance-data"}
)

# IPv6 ranges that carry an IPv4 address in their low 32 bits.
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated, still parsed by stacks
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT (RFC 2765)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix
# RFC 8215 local-use NAT64: where the IPv4 address sits depends on the operator's prefix
# length, so the whole range is judged as private rather than decoded.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
# 0.0.0.0/8 is "this network": 0.0.0.0 reaches the local host on Linux; nothing in it is a
# legitimate destination.
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))


def socket_address(text: str) -> IPAddress:
    """An address as getaddrinfo or a socket spells it, without an IPv6 zone id (``%eth0``)."""
    return ipaddress.ip_address(text.split("%", 1)[0])


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, each once, in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(socket_address(str(sockaddr[0])) for *_, sockaddr in infos))


def normalize(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, compatible, translated, NAT64, 6to4).

    ``::a9fe:a9fe`` and ``::ffff:169.254.169.254`` are both 169.254.169.254; ``::`` and
    ``::1`` stay IPv6 (unspecified, loopback). Anything else is returned unchanged.
    """
    if not isinstance(ip, ipaddress.IPv6Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _IPV4_COMPATIBLE:
        return ip if int(ip) <= 1 else low32
    if ip in _IPV4_TRANSLATED or ip in _NAT64:
        return low32
    return ip


def address_category(ip: IPAddress) -> str:
    """public | loopback | private | link-local | metadata | unspecified (after normalizing)."""
    raw = ip
    ip = normalize(ip)
    if ip in METADATA_ADDRESSES:
        return "metadata"
    if ip.is_unspecified or ip in _THIS_NETWORK:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if raw in _LOCAL_NAT64 or not ip.is_global or ip.is_multicast:
        return "private"
    return "public"


def is_link_local_network(network: IPNetwork) -> bool:
    """True when every address of ``network`` is link-local (it was named on purpose)."""
    return any(
        network.version == block.version and network.subnet_of(block)  # type: ignore[arg-type]
        for block in _LINK_LOCAL
    )
