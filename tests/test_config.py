"""CrawlConfig.validated: one ConfigError per bad field; the task queue size default."""

import dataclasses

import pytest

from crawler.config import (
    DEFAULT_MAX_PATH_REPEATS,
    DEFAULT_MAX_PATH_SEGMENTS,
    DEFAULT_SHARDS,
    DEFAULT_THREADS,
    CrawlConfig,
)
from crawler.errors import ConfigError

SEED = "http://127.0.0.1:8000/"
REDIS = "redis://127.0.0.1:6379/0"


def config(**overrides) -> CrawlConfig:
    fields = {"seeds": (SEED,), "out_dir": "/tmp/out", "workers": 2}
    fields.update(overrides)
    return CrawlConfig(**fields)


def test_a_good_config_validates_to_itself():
    cfg = config()
    assert cfg.validated() is cfg


def test_defaults():
    cfg = config()
    assert cfg.threads == DEFAULT_THREADS == 4
    assert cfg.shards == DEFAULT_SHARDS == 64
    assert cfg.max_depth is None and cfg.max_pages is None and cfg.start_method is None
    assert cfg.max_redirects == 10
    # the trap guards: Heritrix's PathologicalPathDecideRule and TooManyPathSegmentsDecideRule
    assert cfg.max_path_repeats == DEFAULT_MAX_PATH_REPEATS == 2
    assert cfg.max_path_segments == DEFAULT_MAX_PATH_SEGMENTS == 20


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"seeds": ()}, "at least one seed URL is required"),
        ({"workers": 0}, "--workers must be at least 1"),
        ({"workers": -3}, "--workers must be at least 1"),
        ({"threads": 0}, "--threads must be at least 1"),
        ({"max_redirects": 0}, "--max-redirects must be at least 1"),
        ({"queue_size": 0}, "--queue-size must be at least 1"),
        ({"max_pages": 0}, "--max-pages must be at least 1"),
        ({"max_depth": -1}, "--max-depth must be 0 or more"),
        ({"max_path_repeats": 0}, "--max-path-repeats must be at least 1"),
        ({"max_path_segments": 0}, "--max-path-segments must be at least 1"),
        ({"max_path_segments": -5}, "--max-path-segments must be at least 1"),
        ({"connect_timeout_s": 0}, "connect_timeout_s must be more than 0 and at most 86400 s"),
        ({"read_timeout_s": -1.0}, "read_timeout_s must be more than 0 and at most 86400 s"),
        ({"total_timeout_s": float("nan")}, "total_timeout_s must be more than 0 and at most 86400 s"),
        ({"max_body_bytes": 0}, "--max-bytes must be at least 1"),
        ({"workers": 10**11}, "--workers must be at most 1024, got 100000000000"),
        ({"threads": 1025}, "--threads must be at most 1024, got 1025"),
        ({"queue_size": 10**7}, "--queue-size must be at most 1000000, got 10000000"),
        ({"max_redirects": 101}, "--max-redirects must be at most 100, got 101"),
        ({"total_timeout_s": 1e10}, "total_timeout_s must be more than 0 and at most 86400 s"),
        ({"connect_timeout_s": 1e308}, "connect_timeout_s must be more than 0 and at most 86400 s"),
        ({"shards": 2**21}, "--shards must be a power of two up to 1048576, got 2097152"),
        ({"shards": 48}, "--shards must be a power of two up to 1048576, got 48"),
        ({"shards": 0}, "--shards must be a power of two up to 1048576, got 0"),
        ({"shards": 3}, "--shards must be a power of two up to 1048576, got 3"),
        ({"start_method": "thread"}, "unknown start method 'thread'"),
        ({"include": ("(",)}, "bad regex '('"),
        ({"exclude": ("ok", "[z-a]")}, "bad regex '[z-a]'"),
        ({"allow_domains": ("ok.org", "bad host!")}, "--allow-domain 'bad host!' is not a host name"),
        ({"allow_domains": ("x.org:8080",)}, "--allow-domain 'x.org:8080' is not a host name"),
        ({"redis": "127.0.0.1:6379"}, "--redis must be a redis://HOST:PORT/DB URL, got '127.0.0.1:6379'"),
        (
            {"redis": "redis://127.0.0.1:abc/0"},
            "--redis must be a redis://HOST:PORT/DB URL, got 'redis://127.0.0.1:abc/0'",
        ),
        (
            {"redis": "redis://127.0.0.1/notadb"},
            "--redis must be a redis://HOST:PORT/DB URL, got 'redis://127.0.0.1/notadb'",
        ),
        ({"redis": REDIS, "max_pages": 5}, "--max-pages is not supported with --redis yet"),
        ({"redis": REDIS, "max_pages_per_site": 5}, "--max-pages-per-site is not supported with --redis yet"),
        ({"redis": REDIS, "mode": "map"}, "map is not supported with --redis"),
        ({"redis": REDIS, "crawl_name": "a b"}, "--crawl-name must be 1 to 64 letters, digits"),
        ({"redis": REDIS, "crawl_name": "x:y"}, "--crawl-name must be 1 to 64 letters, digits"),
        ({"redis": REDIS, "machine": "m|1"}, "--machine must be 1 to 64 letters, digits"),
        ({"redis": REDIS, "lease_s": 0.5}, "--lease must be from 1 to 86400 s, got 0.5"),
        ({"redis": REDIS, "restart": True}, "--restart does not apply with --redis"),
        ({"redis": REDIS, "sitemaps": True}, "--sitemaps is not supported with --redis yet"),
    ],
)
def test_each_bad_field_raises_config_error(overrides, message):
    with pytest.raises(ConfigError) as info:
        config(**overrides).validated()
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "overrides",
    [
        {"max_depth": 0},
        {"shards": 1},
        {"shards": 2},
        {"shards": 1024},
        {"start_method": "fork"},
        {"start_method": "spawn"},
        {"start_method": "forkserver"},
        {"include": (r"/docs/",), "exclude": (r"\.pdf$",)},
        {"queue_size": 1},
        {"max_pages": 1},
        {"max_path_repeats": 1, "max_path_segments": 1},
        {"max_path_repeats": None, "max_path_segments": None},  # None: unlimited
    ],
)
def test_boundary_values_are_accepted(overrides):
    cfg = config(**overrides)
    assert cfg.validated() is cfg


@pytest.mark.parametrize("workers, threads, expected", [(1, 1, 2), (2, 4, 16), (3, 5, 30)])
def test_task_queue_size_defaults_to_twice_workers_times_threads(workers, threads, expected):
    assert config(workers=workers, threads=threads).task_queue_size == expected


def test_explicit_queue_size_wins():
    assert config(workers=8, threads=8, queue_size=7).task_queue_size == 7


def test_config_is_frozen():
    cfg = config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.workers = 5
