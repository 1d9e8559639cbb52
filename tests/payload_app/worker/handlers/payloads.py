"""The Transcode worker's handler: records what it was handed (``payload MESSAGE_ID SHA256 BYTES POINTER_SIZE``) in
the file ``PAYLOAD_EVENTS`` names (``jobqueues local up --env``)."""

from __future__ import annotations

import hashlib
import os


def handle(body: str, message: object) -> None:
    data = body.encode()
    pointer = getattr(message, "pointer", None)
    size = "-" if pointer is None else str(pointer.size)
    line = f"payload {getattr(message, 'message_id', '')} {hashlib.sha256(data).hexdigest()} {len(data)} {size}\n"
    fd = os.open(os.environ["PAYLOAD_EVENTS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
