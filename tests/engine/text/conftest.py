from tests.engine.models.fixtures import models_cache, trained_minilm  # noqa: F401
