"""The test suite, a package so that its modules import helpers as ``tests.helpers.X``
(pytest puts the project folder, not ``tests/``, on ``sys.path``)."""
