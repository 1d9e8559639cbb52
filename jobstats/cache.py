"""``--cache DIR``: per-file partial aggregates, so each immutable log file is parsed once.

A file is re-read when its size or modification time changes; files no longer among the inputs are
simply not used. The directory is local (the manifest and partials are plain JSON written by the driver).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from jobstats.files import LogFile
from jobstats.histogram import BUCKETS_PER_DECADE

#: 2: rows per (file, day, reason, job type, queue) with a ``cells`` map, integer microsecond sums.
#: The partial rows' maps, stored as pairs.
_MAPS = ("cells", "queue_cells")
#: 3: partial rows count released lines apart; 4: and carry queue-time buckets; 5: and a stack per row.
CACHE_VERSION = 5


class PartialsCache:
    """The partial rows and malformed-line sample of each file read before, under ``directory``."""

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

    def stale(self, files: dict[str, LogFile]) -> list[str]:
        """URIs of the files with no cached partials, or changed (size or modification time) since."""
        return [
            uri
            for uri, log in files.items()
            if (entry := self.files.get(uri)) is None or (entry["size"], entry["mtime"]) != (log.size, log.mtime)
        ]

    def store(self, log: LogFile, rows: list[dict], malformed_sample: list[str]) -> None:
        """Keep a file's partial rows (``cells`` and ``queue_cells`` maps as ``[key, count]`` pairs: JSON keys are
        strings)."""
        name = hashlib.sha1(log.uri.encode()).hexdigest()
        part = self.directory / "partials" / f"{name}.json"
        part.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(json.dumps([{**row, **{m: list(row[m].items()) for m in _MAPS}} for row in rows]))
        self.files[log.uri] = {
            "size": log.size,
            "mtime": log.mtime,
            "partials": str(part.relative_to(self.directory)),
            "malformed_sample": malformed_sample,
        }

    def rows(self, uri: str) -> list[dict]:
        """The partial rows stored for ``uri``."""
        rows = json.loads((self.directory / self.files[uri]["partials"]).read_text())
        return [{**row, **{m: dict(row[m]) for m in _MAPS}} for row in rows]

    def malformed_sample(self, uri: str) -> list[str]:
        """The malformed-line sample stored for ``uri``."""
        return self.files[uri].get("malformed_sample", [])

    def save(self) -> None:
        """Write the manifest (after :meth:`store`)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        manifest = {"version": CACHE_VERSION, "buckets_per_decade": BUCKETS_PER_DECADE, "files": self.files}
        self.manifest_path.write_text(json.dumps(manifest, indent=1))
