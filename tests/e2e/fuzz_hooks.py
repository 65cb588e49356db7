"""Schemathesis hooks for the API fuzzing test (tests/e2e/fuzz.test.mjs).

Generated web addresses would send the Worker to made-up hosts on the internet. Every
well-formed http(s) address is pointed at the test's own page server on loopback instead
(path and query kept), so URL sources are really fetched and read; malformed addresses and
other schemes are left alone, for the Worker to refuse.
"""

import os
from urllib.parse import urlsplit, urlunsplit

import schemathesis

PAGE_BASE = urlsplit(os.environ["FUZZ_PAGE_BASE"])


def _local(value):
    if not isinstance(value, str):
        return value
    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return value
    return urlunsplit((PAGE_BASE.scheme, PAGE_BASE.netloc, parts.path, parts.query, ""))


def _rewrite(node):
    if isinstance(node, dict):
        return {key: _local(value) if key == "url" else _rewrite(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_rewrite(item) for item in node]
    return node


@schemathesis.hook
def map_body(context, body):
    return _rewrite(body)
