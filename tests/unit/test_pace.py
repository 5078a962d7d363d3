"""Issue #36 item 4: the progress bar's rate and ETA mean something on a slow local server."""
from __future__ import annotations

from factjudge.cli.output import Pace, ProgressBar


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_slow_server_shows_its_real_rate_not_zero():
    clock = Clock()
    pace = Pace(clock)
    for _ in range(4):  # 0.4 questions/s: a 2-slot CPU server
        clock.now += 2.5
        pace.add(1, 100)
    assert pace.rate_text() == "0.4/s"  # it said 0/s
    assert pace.eta_text() == "estimating"  # 4 answers: too few to say
    clock.now += 2.5
    pace.add(1, 95)
    assert pace.eta_text() == "0:03:58"  # 95 left at 0.4/s, 0 s since the estimate
    clock.now += 60
    assert pace.rate() < 0.1 and pace.rate_text().endswith("/min")


def test_the_rate_is_over_a_moving_window_and_the_eta_does_not_jump():
    clock = Clock()
    pace = Pace(clock)
    for _ in range(60):  # a minute at 1/s
        clock.now += 1
        pace.add(1, 1000)
    assert round(pace.rate(), 2) == 1.0
    etas = []
    for _ in range(10):  # then 4/s: the window follows within its 30 s
        clock.now += 0.25
        pace.add(1, 1000)
        etas.append(pace.eta)
    # one burst of fast answers moves the smoothed ETA step by step, never by more than a fifth
    assert all(abs(b - a) <= 0.2 * a for a, b in zip(etas, etas[1:], strict=False))
    for _ in range(200):
        clock.now += 0.25
        pace.add(1, 1000)
    assert round(pace.rate(), 1) == 4.0 and abs(pace.eta - 250) < 10


def test_the_bar_counts_through_the_pace():
    bar = ProgressBar(enabled=False)
    bar.on_start(to_judge=1, reused=0, questions=10)
    bar.on_answers(6)
    assert bar.pace.answered == 6 and bar.pace.eta is not None
