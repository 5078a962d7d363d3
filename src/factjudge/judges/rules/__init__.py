"""The rules judge (offline, deterministic) and its normaliser."""
from .judge import RulesJudge

__all__ = ["RulesJudge"]
