"""What ``@scorer`` costs per item: a decorated scorer's ``score`` against the same
logic written as a class, and what loading a plugin module costs the host.

``python bench/decorated_scorer.py`` prints microseconds per call (best of 5 rounds) for
the built-in ``contains`` (explicit config model), a derived-config scorer (``shouts``)
and a hand-written class, plus the time to build a host with the built-ins.
"""

from __future__ import annotations

import time
import timeit

from chalicelib.plugins.manager import PluginHost
from chalicelib.plugins.scorer_contract import ItemContext, ScoreOutcome, ScorerConfig, ScoringEnv
from chalicelib.scoring import configs, deterministic
from chalicelib.scoring import plugin as builtin_scorers
from pawl.plugins import scorer

CALLS = 20_000
ITEM = ItemContext(input=[], output="Refunds take 5 days!", expected=None, item_metadata={})
ENV = ScoringEnv(project_id="proj_bench")


@scorer
def shouts(item: ItemContext, min_bangs: int = 1) -> bool:
    return (item.output or "").count("!") >= min_bangs


class ContainsClass:
    """The pre-decorator shape: a class with the config downcast written by hand."""

    type = "contains"
    named = False
    config_model = configs.ContainsConfig

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        parsed = (
            config
            if isinstance(config, configs.ContainsConfig)
            else configs.ContainsConfig.model_validate(config.model_dump())
        )
        return deterministic.contains(item.output, parsed.value, parsed.case_sensitive)


def per_call_us(fn: object, config: ScorerConfig) -> float:
    score = fn.score  # type: ignore[attr-defined]
    rounds = timeit.repeat(lambda: score(config, ITEM, ENV), number=CALLS, repeat=5)
    return min(rounds) / CALLS * 1e6


def main() -> None:
    contains_config = configs.ContainsConfig.model_validate({"type": "contains", "value": "days"})
    shouts_config = shouts.config_model.model_validate({"type": "shouts", "min_bangs": 1})
    print(f"calls per round: {CALLS}, best of 5")
    print(
        f"class scorer (hand-written):     {per_call_us(ContainsClass(), contains_config):6.2f} us"
    )
    decorated = per_call_us(builtin_scorers.contains, contains_config)
    print(f"@scorer contains (config model): {decorated:6.2f} us")
    print(f"@scorer shouts (derived config): {per_call_us(shouts, shouts_config):6.2f} us")
    started = time.perf_counter()
    for _ in range(20):
        PluginHost([builtin_scorers], load_entry_points=False)
    print(f"host with the built-in scorers:  {(time.perf_counter() - started) / 20 * 1e3:6.2f} ms")


if __name__ == "__main__":
    main()
