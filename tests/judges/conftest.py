from tests.episodes.conftest import agents  # noqa: F401 - the fixture (test_episode_runs)
from tests.model_stub import fake_model  # noqa: F401 - the fixture
