"""Which log files the inputs name: globs expanded and directories walked recursively, through Hadoop's
FileSystem (local paths, ``file:``, ``s3a://``, ``hdfs://``).

A CloudWatch Logs export to S3 is a prefix holding ``aws-logs-write-test`` (the permission probe, not a log)
and ``<task-id>/<log-stream>/000000.gz`` files, where a Lambda stream name has slashes and brackets
(``2026/11/22/[$LATEST]abc``): the probe is skipped, and paths are escaped so Spark does not read brackets
as a glob. Hidden names (``_SUCCESS``, ``.crc``, ``_temporary/``), which Spark skips too, are skipped inside
directories.

A file has one name, :func:`file_uri`, whichever way the inputs spell it (path, glob, ``file:`` URI, relative
path): the name Spark's ``input_file_name()`` gives it, so that every row Spark reads finds its file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

#: The object a CloudWatch Logs export task writes first, to check it may write to the bucket.
EXPORT_WRITE_TEST = "aws-logs-write-test"
_GLOB_CHARS = re.compile(r"([\\\[\]{}*?])")
# A scheme followed by a path with no authority: Hadoop's ``file:/x`` for a globbed local file.
_NO_AUTHORITY = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):/(?!/)")


class InputError(ValueError):
    """The inputs cannot be profiled (missing, empty, or nothing well-formed); the message says what to fix."""


@dataclass(frozen=True)
class LogFile:
    """One input file.

    :param uri: its name in reports, the cache and Spark's ``input_file_name()`` (URI-encoded).
    :param path: the Hadoop path to read, escaped so that Spark takes it literally.
    :param size: bytes.
    :param mtime: modification time, ms since the epoch.
    """

    uri: str
    path: str
    size: int
    mtime: int


def list_files(spark: SparkSession, inputs: list[str]) -> dict[str, LogFile]:
    """Every log file the inputs name (files, directories, globs), by URI, sorted.

    Raises :class:`InputError` for an input that matches nothing or cannot be listed.
    """
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    found: dict[str, LogFile] = {}
    for pattern in inputs:
        try:
            path = jvm.org.apache.hadoop.fs.Path(pattern)
            fs = path.getFileSystem(conf)
            if path.toUri().getScheme() is None and not path.isAbsolute() and fs.getScheme() == "file":
                # Relative to this process's directory, not the JVM's (fixed when the session started).
                path = jvm.org.apache.hadoop.fs.Path(_GLOB_CHARS.sub(r"\\\1", os.getcwd()) + "/" + pattern)
            matches = fs.globStatus(path)  # None for a missing plain path, [] for a glob matching nothing
            if not matches:
                raise InputError(f"cannot read {pattern}: no such file or directory")
            for match in matches:
                for status in _walk(fs, match):
                    log = LogFile(
                        uri=file_uri(status.getPath().toUri().toString()),
                        path=_GLOB_CHARS.sub(r"\\\1", status.getPath().toString()),
                        size=int(status.getLen()),
                        mtime=int(status.getModificationTime()),
                    )
                    found[log.uri] = log
        except Py4JJavaError as error:
            raise InputError(f"cannot read {pattern}: {error.java_exception}") from error
    return dict(sorted(found.items()))


def file_uri(name: str) -> str:
    """A file's one name: ``file:/x/a.log`` (Hadoop's, for a globbed local file) -> ``file:///x/a.log``.

    Both are the same URI, with an empty authority; Spark's ``input_file_name()`` spells it with ``//``.
    Names with an authority (``s3a://bucket/key``) are unchanged.
    """
    return _NO_AUTHORITY.sub(r"\1:///", name)


def _walk(fs, status):  # type: ignore[no-untyped-def]  # Hadoop FileSystem, FileStatus (py4j proxies)
    if not status.isDirectory():
        yield status
        return
    root = status.getPath().toString().rstrip("/") + "/"
    files = fs.listFiles(status.getPath(), True)  # recursive; one flat listing per prefix on S3
    while files.hasNext():
        file = files.next()
        relative = file.getPath().toString().removeprefix(root)
        if relative == EXPORT_WRITE_TEST or any(part.startswith(("_", ".")) for part in relative.split("/")):
            continue
        yield file
