"""What the test modules share that is not a fixture: test servers, crawl runners,
readers of a crawl's output and reference computations. Fixtures shared by more than
one test module live in ``tests/conftest.py``; no test module imports another."""
