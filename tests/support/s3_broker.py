"""A Kafka-protocol broker whose log can lose its head, for the truncated-log tests (issue 31).

The session's broker (Tansu on its memory engine) enforces no retention and refuses
DeleteRecords, so its partitions always start at offset 0. The same Tansu binary on its S3
engine keeps each record batch as an object (`…/partitions/<n>/records/<offset>.batch`) and the
partition's low and high watermarks in `watermark.json`. Over a local S3 server (moto's), a
test removes the first batches and raises the low watermark, as a broker's retention does
when it drops the oldest segments: a consumer then starts at the new first offset, and
ListOffsets "earliest" answers it.

Both servers run as child processes on free ports and are stopped by PID.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from services.ops.stack.readiness import kafka_ready
from services.ops.stack.servers import HOST, Launch, free_port, launch, log_tail, tansu_launch

BUCKET = "tansu"
CLUSTER = "tansu_cluster"
READY_SECONDS = 30.0
CREDENTIAL = "test"
REGION = "us-east-1"


@dataclass(frozen=True, slots=True)
class S3Broker:
    """A running Tansu on S3: its bootstrap address and the S3 server holding its log."""

    bootstrap: str
    s3_url: str

    def drop_head(self, topic: str, partition: int, first: int) -> None:
        """Drop every record of the partition before offset `first` (each batch its own
        object, as one record published and awaited at a time makes them), as retention
        does."""
        import boto3  # moto's own dependency, with the server in the test extra

        s3 = boto3.client(
            "s3",
            endpoint_url=self.s3_url,
            aws_access_key_id=CREDENTIAL,
            aws_secret_access_key=CREDENTIAL,
            region_name=REGION,
        )
        base = f"clusters/{CLUSTER}/topics/{topic}/partitions/{partition:010d}"
        watermark = json.loads(
            s3.get_object(Bucket=BUCKET, Key=f"{base}/watermark.json")["Body"].read()
        )
        for offset in range(first):
            s3.delete_object(Bucket=BUCKET, Key=f"{base}/records/{offset:020d}.batch")
        watermark["low"] = first
        s3.put_object(
            Bucket=BUCKET, Key=f"{base}/watermark.json", Body=json.dumps(watermark).encode()
        )


def _until(ready: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path, what: str) -> None:
    """Poll `ready` until it holds; fail with the log's last lines if `proc` exits first or
    `READY_SECONDS` pass."""
    deadline = time.monotonic() + READY_SECONDS
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            state = "exited" if proc.poll() is not None else f"not ready in {READY_SECONDS} s"
            raise RuntimeError(f"{what} {state}; last lines of {log}:\n{log_tail(str(log))}")
        time.sleep(0.1)


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except httpx.TransportError:
        return False
    return True


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextmanager
def s3_broker(state_dir: Path) -> Iterator[S3Broker]:
    """Start moto's S3 server and Tansu on it (a bucket of its own), stop both on exit."""
    s3_port, kafka_port = free_port(), free_port()
    s3_url = f"http://{HOST}:{s3_port}"
    s3_log, kafka_log = state_dir / "s3.log", state_dir / "tansu-s3.log"
    server = Launch([sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(s3_port)], s3_url)
    s3 = launch(server, state_dir, s3_log, "wb")
    try:
        _until(lambda: _answers(s3_url), s3, s3_log, "the S3 server")
        httpx.put(f"{s3_url}/{BUCKET}", timeout=10).raise_for_status()
        broker = tansu_launch(
            kafka_port,
            f"s3://{BUCKET}/",
            {
                "AWS_ENDPOINT": s3_url,
                "AWS_ALLOW_HTTP": "true",
                "AWS_ACCESS_KEY_ID": CREDENTIAL,
                "AWS_SECRET_ACCESS_KEY": CREDENTIAL,
                "AWS_DEFAULT_REGION": REGION,
            },
        )
        kafka = launch(broker, state_dir, kafka_log, "wb")
        try:
            _until(lambda: kafka_ready(broker.endpoint), kafka, kafka_log, "the broker")
            yield S3Broker(bootstrap=broker.endpoint, s3_url=s3_url)
        finally:
            _stop(kafka)
    finally:
        _stop(s3)
