"""What may leave Sherlock: the one rule for the environment variables and destinations that
user-written configs name (agent adapters, verifiers, webhooks), which run with the workers'
environment and network position.

- A config names an environment variable only if the operator listed it for that purpose
  (`SHERLOCK_AGENT_ENV`, `SHERLOCK_VERIFIER_ENV`), and never one of Sherlock's own secrets
  (`is_sherlock_secret`), even when listed.
- A destination is an http(s) URL without credentials whose host a setting allows
  (`SHERLOCK_AGENT_HOSTS`, `SHERLOCK_WEBHOOK_HOSTS`, `SHERLOCK_VERIFIER_HOSTS`): named, or
  inside a listed network, or, through `*`, only a public address that is no local name.
- A host is checked as the one ASCII name every HTTP client sends (`client_host`): a name two
  IDNA readings spell apart is refused.
- A secret goes only to a host named explicitly, never one allowed by `*`.

`check_destination` runs when a config is saved and again, `strict` (a name that does not
resolve is refused), when it runs. What it cannot see (DNS rebinding) and each rule in full:
docs/adapters.md, "Secrets and destinations".
"""

import ipaddress
import os
import re
import socket
import urllib.parse
from typing import Any

import httpx2
from django.conf import settings

# Sherlock's own secrets, by name; `is_sherlock_secret` adds every SHERLOCK_* and DJANGO_*.
SECRET_VARIABLES = frozenset(
    {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "OPENAI_API_KEY", "PGPASSWORD", "PGPASSFILE"}
)
SECRET_PREFIXES = ("SHERLOCK_", "DJANGO_")


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressRefused(ValueError):
    """A variable or a destination the operator's rules refuse; the message says which rule."""


def is_sherlock_secret(name: str) -> bool:
    return name in SECRET_VARIABLES or name.startswith(SECRET_PREFIXES)


def variable_name_error(name: Any) -> str | None:
    """Why `name` cannot be listed in an `*_ENV` setting, or None (the settings' check)."""
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
        return f"{name!r} is not a variable name"
    if is_sherlock_secret(name):
        return f"{name} is Sherlock's own secret"
    return None


def check_variable(name: Any, setting: str) -> None:
    """Refuse (EgressRefused) an environment variable `settings.<setting>` does not list, and
    Sherlock's own secrets even when it does."""
    if isinstance(name, str) and is_sherlock_secret(name):
        raise EgressRefused(f"{name} is Sherlock's own secret and is never sent")
    if not isinstance(name, str) or name not in getattr(settings, setting):
        raise EgressRefused(
            f"{name!r} is not allowed ({setting} lists the environment variables that are)"
        )


def read_variable(name: str, setting: str) -> str | None:
    """The variable's value now (None when unset), after `check_variable`."""
    check_variable(name, setting)
    return os.environ.get(name)


# What an HTTP header's value may be (RFC 9110 field-value, in ASCII): visible characters and
# inner spaces or tabs, none at either end.
_HEADER_VALUE = re.compile(r"[!-~]+(?:[ \t]+[!-~]+)*")


def header_value_error(value: str) -> str | None:
    """Why `value` cannot be sent as a header's value, in words that never quote it, or None.

    The HTTP libraries refuse such a value with an error that quotes it whole (h11's "Illegal
    header value b'...'", http.client's "Invalid header value"), and that text would be kept
    as a trial's error or a verifier's evidence, or sent to a model as a tool's result: a
    secret read from a file often ends in a newline. So the value is checked first."""
    if value == "" or _HEADER_VALUE.fullmatch(value):
        return None
    if "\n" in value or "\r" in value:
        return "it holds a line break (a value read from a file often ends in one)"
    if any(ord(c) < 32 or ord(c) == 127 for c in value if c != "\t"):
        return "it holds a control character"
    if not value.isascii():
        return "it holds a character that is not ASCII"
    return "it begins or ends with whitespace"


# --- hosts ------------------------------------------------------------------------------------


def host_entry_error(entry: str) -> str | None:
    """Why `entry` is not a host rule, or None (the settings' check)."""
    if entry == "*" or _network(entry) is not None:
        return None
    bare = entry.removeprefix(".")
    if bare and all(c.isascii() and (c.isalnum() or c in "-.") for c in bare):
        return None
    return f"{entry!r} is not a host name, an IP address or a network (no scheme or port)"


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    text = entry[1:-1] if entry.startswith("[") and entry.endswith("]") else entry
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _address(text: str) -> Address | None:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _kind(address: Address) -> str | None:
    """What makes `address` not public, or None when it is."""
    for kind in ("loopback", "link_local", "multicast", "unspecified", "reserved", "private"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "non-public"


# Names that only mean something inside a network: `localhost` (RFC 6761), mDNS's `.local`,
# the private-use `.internal` (metadata.google.internal), `.home.arpa`, and any name of one
# label (`redis`, `db`: the resolver's search domains complete it to an internal host).
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".lan")


def _local_name(host: str) -> bool:
    return host == "localhost" or "." not in host or host.endswith(LOCAL_SUFFIXES)


def _resolve(host: str) -> set[Address] | None:
    try:
        answers = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return None
    found = (_address(str(answer[4][0]).split("%")[0]) for answer in answers)
    return {address for address in found if address is not None}


def check_destination(  # noqa: C901
    url: Any, setting: str, *, sends_secrets: bool = False, strict: bool = False
) -> str:
    """Refuse (EgressRefused) a URL the rules of `settings.<setting>` do not allow (module
    docstring); return its host. `sends_secrets`: the request carries environment values.
    `strict` (at run time): a host that does not resolve is refused too."""
    try:
        split = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        hostname = split.hostname if split else None
        credentials = split is not None and (split.username or split.password) is not None
        split and split.port  # noqa: B018 -- raises ValueError on a port out of range
    except ValueError:
        split = hostname = None
    if split is None or split.scheme not in ("http", "https") or not hostname:
        raise EgressRefused("must be an http(s) URL")
    if credentials:
        raise EgressRefused(
            "credentials in a URL (user:password@) are refused: name them by environment "
            "variable in a header"
        )
    host = client_host(url, hostname)
    shown = f"[{host}]" if ":" in host else host
    entries = [entry.lower() for entry in getattr(settings, setting)]
    networks = [network for entry in entries if (network := _network(entry)) is not None]
    literal = _address(host)
    if literal is not None:
        explicit = any(literal in network for network in networks)
    else:
        explicit = any(
            _matches(host, entry) for entry in entries if entry != "*" and _network(entry) is None
        )
    if explicit:
        return host
    if "*" not in entries:
        raise EgressRefused(f"host {shown} is not allowed ({setting} lists the hosts that are)")
    if sends_secrets:
        raise EgressRefused(
            f"environment values are only sent to hosts {setting} names; {shown} is only "
            "allowed by '*'"
        )
    if literal is None and _local_name(host):
        raise EgressRefused(f"host {shown} is a local name: refused unless {setting} names it")
    addresses = {literal} if literal is not None else _resolve(host)
    if addresses is None:
        if strict:
            raise EgressRefused(f"host {shown} does not resolve")
        return host
    for address in sorted(addresses, key=str):
        kind = _kind(address)
        if kind and not any(address in network for network in networks):
            where = "is" if literal is not None else f"resolves to {address},"
            article = "an" if kind[0] in "aeiou" else "a"
            raise EgressRefused(
                f"host {shown} {where} {article} {kind} address: refused unless {setting} "
                "lists it (the host, the address or its network)"
            )
    return host


def client_host(url: str, hostname: str) -> str:
    """The URL's host as the HTTP clients send it: the ASCII name that is resolved and
    connected to, lowercased, without a final dot. `hostname` is `urlsplit`'s reading.

    A non-ASCII name has two ASCII spellings: IDNA 2003 (Python's `idna` codec, used by
    `socket.getaddrinfo` and urllib: `faß` is `fass`) and IDNA 2008 (httpx2, and through it the
    OpenAI SDK: `xn--fa-hia`). Different names in DNS, so a name checked under one and
    connected to under the other could reach any address; a name is accepted only when both
    spell it alike, and is then checked as that ASCII name. The host httpx2 reads in the URL
    must be the one `urlsplit` reads, too (one URL, one host for the check and the client)."""
    host = hostname.rstrip(".").lower()
    try:
        client = httpx2.URL(url).raw_host.decode("ascii").rstrip(".").lower()
    except (httpx2.InvalidURL, UnicodeError):
        client = None
    if host.isascii():
        if client != host:
            raise EgressRefused(f"host {host!r} is not read alike by every HTTP client: refused")
        return host
    try:
        legacy = host.encode("idna").decode("ascii").rstrip(".")
    except UnicodeError:
        legacy = None
    if client is None or legacy is None:
        raise EgressRefused(f"host {host!r} is not a valid internationalised (IDNA) name")
    if client != legacy:
        raise EgressRefused(
            f"host {host!r} is spelled {legacy} under IDNA 2003 and {client} under IDNA 2008, "
            "two different names: write the ASCII name you mean"
        )
    return client


def _matches(host: str, entry: str) -> bool:
    if entry.startswith("."):
        return host == entry[1:] or host.endswith(entry)
    return host == entry
