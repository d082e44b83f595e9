"""tests/ is a package so that test code imports its fixtures as tests.fixtures, with the
repository's root on PYTHONPATH (CTest sets it), whatever other `tests` an environment has."""
