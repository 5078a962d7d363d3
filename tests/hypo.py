"""How many examples a property test runs: the count written at it under ``pytest
--hypothesis-profile thorough`` (what each property was measured at), a quarter of it otherwise, so
that the README's ``pytest`` stays quick. The profile is registered in ``tests/conftest.py``."""
from hypothesis import settings

THOROUGH = "thorough"


def examples(n: int) -> int:
    """``n`` under the thorough profile, else a quarter of it and at least 20."""
    if settings.get_current_profile_name() == THOROUGH:
        return n
    return max(20, n // 4)
