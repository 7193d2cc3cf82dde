"""Tests for crawler.web.retry: transient failures, Retry-After (conformance C24), backoff."""

from __future__ import annotations

import random

import pytest

from crawler.web.retry import backoff_s, is_transient, parse_retry_after
from tests.helpers.conformance import load_cases


@pytest.mark.parametrize(
    "status, reason, expected",
    [
        (429, None, True),
        (503, None, True),
        (500, None, True),
        (502, None, True),
        (504, None, True),
        (408, None, True),
        (404, None, False),
        (403, None, False),
        (501, None, False),
        (505, None, False),
        (200, None, False),
        (None, "timeout", True),
        (None, "connection", True),
        (None, "incomplete body", True),
        (None, "ssl", False),
        (None, "invalid url", False),
        (None, "decoding", False),
    ],
)
def test_is_transient(status, reason, expected):
    assert is_transient(status, reason) is expected


def test_C24_retry_after_seconds_and_http_date_relative_to_the_response_date():
    case = {c["id"]: c for c in load_cases()}["C24"]
    assert case["category"] == "http-robustness" and "Retry-After: 7" in case["input"]
    # (a) Retry-After: 7
    assert parse_retry_after("7") == 7.0
    # (b) HTTP-date, taken against the response's Date header, not the local clock
    assert parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT", "Wed, 21 Oct 2026 07:27:00 GMT", now_epoch=0.0) == 60.0
    # (c) a day: parsed as is; the policy cap (--max-retry-wait) is the fetcher's
    assert parse_retry_after("86400") == 86400.0


@pytest.mark.parametrize(
    "value, date, now, expected",
    [
        (None, None, None, None),
        ("", None, None, None),
        ("  12 ", None, None, 12.0),
        ("-5", None, 0.0, None),  # not delay-seconds, not a date
        ("soon", None, 0.0, None),
        ("Wed, 21 Oct 2026 07:28:00 GMT", None, 1792567620.0, 60.0),  # no Date: local clock
        ("Wed, 21 Oct 2026 07:28:00 GMT", "garbage", 1792567620.0, 60.0),
        ("Wed, 21 Oct 2026 07:28:00 GMT", "Wed, 21 Oct 2026 07:30:00 GMT", None, 0.0),  # past
        ("Wed, 21 Oct 2026 07:28:00 GMT", None, None, None),  # no reference time at all
    ],
)
def test_parse_retry_after_edge_cases(value, date, now, expected):
    assert parse_retry_after(value, date, now) == expected


def test_backoff_doubles_with_jitter_and_is_capped():
    rng = random.Random(7)
    for attempt, nominal in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (10, 30.0), (1000, 30.0)]:
        waits = [backoff_s(attempt, 1.0, 30.0, rng) for _ in range(200)]
        assert all(0.5 * nominal <= w < 1.5 * nominal for w in waits), (attempt, min(waits), max(waits))
        assert max(waits) - min(waits) > 0.5 * nominal  # jitter spreads them
