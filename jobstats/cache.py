"""``--cache DIR``: per-file partial aggregates, so each immutable log file is parsed once.

A file is re-read when its size or modification time changes; files no longer among the inputs are
simply not used. The directory is local (the manifest and partials are plain JSON written by the driver).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from jobstats.histogram import BUCKETS_PER_DECADE

CACHE_VERSION = 1


class PartialsCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.manifest_path = directory / "manifest.json"
        self.files: dict[str, dict[str, Any]] = {}
        if self.manifest_path.exists():
            manifest = json.loads(self.manifest_path.read_text())
            compatible = (
                manifest.get("version") == CACHE_VERSION and manifest.get("buckets_per_decade") == BUCKETS_PER_DECADE
            )
            if compatible:
                self.files = manifest["files"]

    def stale(self, files: dict[str, tuple[int, int]]) -> list[str]:
        """Files (``uri -> (size, mtime)``) with no cached partials or changed since."""
        return [
            uri
            for uri, (size, mtime) in files.items()
            if (entry := self.files.get(uri)) is None or (entry["size"], entry["mtime"]) != (size, mtime)
        ]

    def store(self, uri: str, size: int, mtime: int, rows: list[dict], malformed_sample: list[str]) -> None:
        name = hashlib.sha1(uri.encode()).hexdigest()
        part = self.directory / "partials" / f"{name}.json"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(json.dumps(rows))
        self.files[uri] = {
            "size": size,
            "mtime": mtime,
            "partials": str(part.relative_to(self.directory)),
            "malformed_sample": malformed_sample,
        }

    def rows(self, uri: str) -> list[dict]:
        return json.loads((self.directory / self.files[uri]["partials"]).read_text())

    def malformed_sample(self, uri: str) -> list[str]:
        return self.files[uri].get("malformed_sample", [])

    def save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        manifest = {"version": CACHE_VERSION, "buckets_per_decade": BUCKETS_PER_DECADE, "files": self.files}
        self.manifest_path.write_text(json.dumps(manifest, indent=1))
