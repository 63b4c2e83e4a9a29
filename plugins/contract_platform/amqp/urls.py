"""What an AMQP URL names, read one way everywhere (the RabbitMQ URI specification).

``amqp://user:password@host:port/vhost``: the virtual host is the path's one segment, percent-decoded
(``%2F`` is ``/``, the default virtual host). No path, or an empty one, names the default virtual host
``/``, as the platform's settings and pika treat it. Parsing never needs the broker or pika.
"""

from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = ["vhost_of", "with_vhost"]


def vhost_of(url: str) -> str:
    """The virtual host ``url`` names: ``amqp://h/%2F`` and ``amqp://h`` -> ``/``, ``amqp://h/billing`` -> ``billing``."""
    path = urlsplit(url).path
    return unquote(path[1:]) if len(path) > 1 else "/"


def with_vhost(url: str, vhost: str) -> str:
    """``url`` naming ``vhost`` instead of its own (``/`` is written ``%2F``); credentials and query kept."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + quote(vhost, safe=""), parts.query, parts.fragment))
