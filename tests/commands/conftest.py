from tests.model_stub import fake_model  # noqa: F401 - the fixture
