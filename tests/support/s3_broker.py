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
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from services.ops.stack.servers import HOST, free_port, tansu_binary

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


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the S3 server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"the S3 server did not answer within {READY_SECONDS} s")


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the broker exited: {log.read_text(errors='replace')[-2000:]}")
        with socket.socket() as sock:
            if sock.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the broker did not listen within {READY_SECONDS} s")


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
    with s3_log.open("wb") as out:
        s3 = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(s3_port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_http(s3_url, s3, s3_log)
        httpx.put(f"{s3_url}/{BUCKET}", timeout=10).raise_for_status()
        url = f"tcp://{HOST}:{kafka_port}"
        env = {
            **os.environ,
            "AWS_ENDPOINT": s3_url,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": CREDENTIAL,
            "AWS_SECRET_ACCESS_KEY": CREDENTIAL,
            "AWS_DEFAULT_REGION": REGION,
            "RUST_LOG": "warn",
            "NO_COLOR": "1",
        }
        argv = [str(tansu_binary()), "broker", "--listener-url", url]
        argv += ["--advertised-listener-url", url, "--storage-engine", f"s3://{BUCKET}/"]
        with kafka_log.open("wb") as out:
            kafka = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        try:
            _wait_port(kafka_port, kafka, kafka_log)
            yield S3Broker(bootstrap=f"{HOST}:{kafka_port}", s3_url=s3_url)
        finally:
            _stop(kafka)
    finally:
        _stop(s3)
