"""The configured sources: every downloaded file, keyed by its path under resources/.

`sources.KEY = {md5 | no_md5_reason, urls: [...]}`; `{name}` in a URL stands for the base of
`mirrors.name`, so that pointing one mirror elsewhere moves every source under it.
"""

from __future__ import annotations

import re

MIRROR_NAME = re.compile(r"\{([A-Za-z0-9_.-]+)\}")


def entry(config: dict, key: str) -> dict:
    if key not in config["sources"]:
        raise ValueError(f"sources: no entry for {key!r}, which a data set or corpus names")
    return config["sources"][key]


def urls(config: dict, key: str) -> list[str]:
    """A source's URLs in order, each `{mirror}` replaced by the mirror's base."""

    def base(match: re.Match) -> str:
        name = match.group(1)
        if name not in config["mirrors"]:
            raise ValueError(f"sources.{key}: no mirror named {name!r} (configured: {', '.join(config['mirrors'])})")
        return config["mirrors"][name].rstrip("/")

    return [MIRROR_NAME.sub(base, url) for url in entry(config, key)["urls"]]


def is_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def local_path(config: dict, key: str) -> str:
    """The file of a source whose first URL is local (a local mirror, the demo world)."""
    first = urls(config, key)[0]
    if not is_local(first):
        raise ValueError(f"sources.{key}: its first URL {first} is not a local path")
    return first.removeprefix("file://")
