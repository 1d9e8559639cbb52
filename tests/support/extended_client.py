"""The official AWS SQS Extended Client for Python (``amazon-sqs-extended-client``), run as a process of its own.

Importing ``sqs_extended_client`` replaces boto3's ``Session`` class in the whole process, so a test never imports
it: it runs this script (:func:`run_extended_client`), which talks to the endpoint ``AWS_ENDPOINT_URL`` names.

    python extended_client.py send QUEUE_URL BUCKET BYTES   -> {"message_id", "sha256", "bytes"}
    python extended_client.py receive QUEUE_URL             -> {"message_id", "sha256", "bytes", "attributes"}

``send`` sends a payload of ``BYTES`` bytes (UTF-8, multi-byte characters included; :func:`payload`) with the
client's large payload support on ``BUCKET``; ``receive`` receives one message (waiting up to 20 s) as the client
hands it to its caller, and deletes it with the client (its object too: ``delete_payload_from_s3``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def payload(size: int) -> str:
    """Text of exactly ``size`` bytes in UTF-8: blocks of a two-byte character and 1,022 ASCII ones."""
    block = "ü" + "a" * 1022
    text = block * (size // 1024)
    return text + "b" * (size - len(text.encode()))


def digest(text: str) -> tuple[str, int]:
    data = text.encode()
    return hashlib.sha256(data).hexdigest(), len(data)


def run_extended_client(env: dict[str, str], *args: str) -> dict[str, Any]:
    """Run this script with ``args`` in ``env`` (the emulator's credentials and endpoint); its JSON answer."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def main(argv: list[str]) -> None:
    import boto3
    import sqs_extended_client  # noqa: F401  (replaces boto3.session.Session)

    sqs: Any = boto3.session.Session().client("sqs")
    if argv[0] == "send":
        queue_url, bucket, size = argv[1], argv[2], int(argv[3])
        sqs.large_payload_support = bucket
        text = payload(size)
        sent = sqs.send_message(QueueUrl=queue_url, MessageBody=text)
        sha, length = digest(text)
        print(json.dumps({"message_id": sent["MessageId"], "sha256": sha, "bytes": length}))
        return
    queue_url = argv[1]
    sqs.large_payload_support = "unused-for-receive"  # receive resolves any pointer; delete needs the flag on
    sqs.delete_payload_from_s3 = True
    messages = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=1, WaitTimeSeconds=20, MessageAttributeNames=["All"]
    ).get("Messages", [])
    assert messages, "no message"
    message = messages[0]
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    sha, length = digest(message["Body"])
    answer = {"message_id": message["MessageId"], "sha256": sha, "bytes": length}
    print(json.dumps({**answer, "attributes": message.get("MessageAttributes", {})}))


if __name__ == "__main__":
    main(sys.argv[1:])
