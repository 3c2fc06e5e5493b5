import pytest

from .certs import make_certs


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))
