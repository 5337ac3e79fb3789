#!/usr/bin/env python3
"""Load for infra/test-production's rolling restart: producers and consumers through a load balancer.

Producers publish bodies named by their own idempotency keys (POST /queue/v1/<slug>/messages) until
the stop file appears; consumers long-poll (consume, max_wait_seconds 5) and acknowledge what they
get, and go on after the producers stop until every acknowledged publish has been consumed (or
--drain-seconds pass). Idle consumers long-poll a second queue that nothing publishes to, so that
some polls are always held when a replica stops. A 503 is retried with the same request (the same idempotency key) after its
Retry-After and counted apart; any other non-2xx answer, or a request that got no answer, is a
failure. Prints one JSON object with the figures, and the first failures, on standard output.

Only the standard library; only the address given (infra/test-production gives a loopback one).
"""

import argparse
import base64
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

RETRIES_503 = 20


class Tally:
    """The figures, shared by every thread under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.by_kind = {}
        self.failed = []  # (kind, what) for every request that failed
        self.retried_503 = 0  # 503s that a later try of the same request got past
        self.published = set()  # keys whose publish was answered 2xx
        self.deliveries = {}  # key -> times delivered
        self.acked = set()  # keys whose ack succeeded
        self.delivered_after_ack = 0
        self.ack_failures = 0  # receipts the ack answered as failed (lease lost, ...)

    def count(self, kind):
        with self.lock:
            self.requests += 1
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1

    def fail(self, kind, what):
        with self.lock:
            self.failed.append((kind, what, round(time.time(), 3)))


class Client:
    """One keep-alive connection to the load balancer, reopened after any error."""

    def __init__(self, base, token, timeout):
        url = urllib.parse.urlsplit(base)
        self.host, self.port = url.hostname, url.port or 80
        self.token, self.timeout = token, timeout
        self.conn = None

    def call(self, tally, kind, path, payload):
        """POSTs payload; returns the parsed 2xx answer, or None when the request failed."""
        body = json.dumps(payload).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        for attempt in range(RETRIES_503 + 1):
            tally.count(kind)
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                self.conn.request("POST", path, body=body, headers=headers)
                response = self.conn.getresponse()
                data = response.read()
                status = response.status
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
            except (OSError, http.client.HTTPException) as err:
                self.close()
                tally.fail(kind, f"no answer: {type(err).__name__}: {err}")
                return None
            if 200 <= status < 300:
                if attempt:
                    with tally.lock:
                        tally.retried_503 += attempt
                return json.loads(data) if data else {}
            if status == 503 and attempt < RETRIES_503:
                retry_after = response.getheader("Retry-After") or "0.2"
                try:
                    pause = min(float(retry_after), 2.0)
                except ValueError:
                    pause = 0.2
                time.sleep(max(pause, 0.05))
                continue
            tally.fail(kind, f"{status}: {data[:300].decode(errors='replace')}")
            return None
        return None

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def producer(args, tally, index, stop):
    client = Client(args.url, args.token, timeout=30)
    path = f"/queue/v1/{args.slug}/messages"
    n = 0
    while not stop.is_set() and n < args.max_per_producer:
        key = f"p{index}-{n}"
        n += 1
        answer = client.call(tally, "publish", path, {"body": key, "idempotency_key": key})
        if answer is not None:
            with tally.lock:
                tally.published.add(key)
        time.sleep(args.publish_pause)
    client.close()


def consumer(args, tally, stop_consuming):
    client = Client(args.url, args.token, timeout=args.wait + 30)
    consume = f"/queue/v1/{args.slug}/consume"
    ack = f"/queue/v1/{args.slug}/ack"
    while not stop_consuming.is_set():
        answer = client.call(
            tally,
            "consume",
            consume,
            {"max_messages": 10, "max_wait_seconds": args.wait, "visibility_seconds": args.visibility},
        )
        if answer is None:
            time.sleep(0.1)
            continue
        messages = answer.get("messages", [])
        if not messages:
            continue
        keys = {}
        with tally.lock:
            for message in messages:
                key = base64.b64decode(message["body_base64"]).decode()
                keys[message["receipt"]] = key
                tally.deliveries[key] = tally.deliveries.get(key, 0) + 1
                if key in tally.acked:
                    tally.delivered_after_ack += 1
        acked = client.call(tally, "ack", ack, {"receipts": list(keys)})
        if acked is None:
            continue
        refused = {f["receipt"] for f in acked.get("failed", [])}
        with tally.lock:
            tally.ack_failures += len(refused)
            tally.acked.update(key for receipt, key in keys.items() if receipt not in refused)
    client.close()


def idle_consumer(args, tally, stop_consuming):
    client = Client(args.url, args.idle_token, timeout=args.wait + 30)
    consume = f"/queue/v1/{args.idle_slug}/consume"
    while not stop_consuming.is_set():
        answer = client.call(tally, "held consume", consume, {"max_messages": 10, "max_wait_seconds": args.wait})
        if answer is None:
            time.sleep(0.1)
        elif answer.get("messages"):
            tally.fail("held consume", f"the idle queue answered messages: {answer}")
    client.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the load balancer, http://127.0.0.1:PORT")
    parser.add_argument("--slug", required=True)
    parser.add_argument("--token", default=os.environ.get("AQS_LOAD_TOKEN"), help="or AQS_LOAD_TOKEN")
    parser.add_argument("--stop-file", required=True, help="producers stop once this file exists")
    parser.add_argument("--producers", type=int, default=3)
    parser.add_argument("--consumers", type=int, default=3)
    parser.add_argument("--publish-pause", type=float, default=0.02, help="seconds between a producer's publishes")
    parser.add_argument("--max-per-producer", type=int, default=20000)
    parser.add_argument("--max-seconds", type=float, default=180, help="producers stop after this long regardless")
    parser.add_argument("--wait", type=int, default=5, help="max_wait_seconds of each consume")
    parser.add_argument("--visibility", type=int, default=10, help="visibility_seconds of each consume")
    parser.add_argument("--drain-seconds", type=float, default=60)
    parser.add_argument("--idle-slug", help="a queue nothing publishes to, long-polled by --idle-consumers")
    parser.add_argument("--idle-token", default=os.environ.get("AQS_LOAD_IDLE_TOKEN"), help="or AQS_LOAD_IDLE_TOKEN")
    parser.add_argument("--idle-consumers", type=int, default=3)
    args = parser.parse_args()
    if not args.token:
        parser.error("--token or AQS_LOAD_TOKEN is required")
    if args.idle_slug and not args.idle_token:
        parser.error("--idle-slug needs --idle-token or AQS_LOAD_IDLE_TOKEN")

    tally = Tally()
    stop_producing, stop_consuming = threading.Event(), threading.Event()
    producers = [threading.Thread(target=producer, args=(args, tally, i, stop_producing)) for i in range(args.producers)]
    consumers = [threading.Thread(target=consumer, args=(args, tally, stop_consuming)) for _ in range(args.consumers)]
    if args.idle_slug:
        consumers += [
            threading.Thread(target=idle_consumer, args=(args, tally, stop_consuming)) for _ in range(args.idle_consumers)
        ]
    started = time.monotonic()
    for thread in producers + consumers:
        thread.start()
    print(
        f"load: {args.producers} producers, {args.consumers} consumers, {args.idle_consumers if args.idle_slug else 0}"
        f" idle consumers on {args.url}",
        file=sys.stderr,
        flush=True,
    )

    while not os.path.exists(args.stop_file) and time.monotonic() - started < args.max_seconds:
        time.sleep(0.1)
    stop_producing.set()
    for thread in producers:
        thread.join()
    produced_for = time.monotonic() - started

    deadline = time.monotonic() + args.drain_seconds
    while time.monotonic() < deadline:
        with tally.lock:
            if tally.published <= tally.acked:
                break
        time.sleep(0.2)
    stop_consuming.set()
    for thread in consumers:
        thread.join()

    delivered = sum(tally.deliveries.values())
    consumed = set(tally.deliveries)
    failed_by_kind = {}
    for kind, _, _ in tally.failed:
        failed_by_kind[kind] = failed_by_kind.get(kind, 0) + 1
    print(
        json.dumps(
            {
                "seconds_producing": round(produced_for, 1),
                "requests": tally.requests,
                "requests_by_kind": tally.by_kind,
                "failed": len(tally.failed),
                "failed_by_kind": failed_by_kind,
                "first_failures": tally.failed[:10],
                "retried_503": tally.retried_503,
                "published": len(tally.published),
                "consumed": len(consumed & tally.published),
                "lost": len(tally.published - consumed),
                "lost_examples": sorted(tally.published - consumed)[:10],
                "acked": len(tally.acked),
                "unacked": len(tally.published - tally.acked),
                "deliveries": delivered,
                "duplicates": delivered - len(consumed),
                "delivered_after_ack": tally.delivered_after_ack,
                "ack_refused": tally.ack_failures,
                "unexpected": len(consumed - tally.published),
            }
        )
    )


if __name__ == "__main__":
    main()
