"""The store fixtures (SQLite, and PostgreSQL when it answers) for the robustness probes."""
from tests.store.conftest import pg_admin, store, store_url  # noqa: F401 - fixtures
