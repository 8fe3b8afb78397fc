"""Shared test helpers, one concept per module (imported as ``from helpers.<module> import ...``; pytest puts
``tests/`` on the path, see ``pythonpath`` in pyproject.toml). The fixtures are the ``fixtures_*`` modules, registered
as plugins in tests/conftest.py. See tests/README.md."""
