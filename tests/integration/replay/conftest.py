"""Fixtures of the in-flight replay tests: a private vhost on the local broker and a connection to it."""

from tests.support.vhosts import connection, vhost

__all__ = ["connection", "vhost"]
