"""What the commands print: the one-line summary, the progress bar, the dry-run plan."""
from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import typer

from ..core.analysis import count_categories, total_categories
from ..judges.llm.tokens import answer_tokens
from ..models import CategoryCounts, Direction, JudgeResult, Prices, Usage, Verdict, money
from ..reports.format import fmt


def usage_text(u: Usage) -> str:
    if not (u.llm_calls or u.cache_hits):
        return "no LLM calls"
    cached = f" ({u.cached_prompt_tokens:,} cached)" if u.cached_prompt_tokens else ""
    hits = f", {u.cache_hits} cache hits" if u.cache_hits else ""
    saved = f", {u.llm_calls_saved} decided by rules" if u.llm_calls_saved else ""
    return (f"{u.llm_calls} calls{hits}{saved}, {u.prompt_tokens:,} prompt tokens{cached}, "
            f"{u.completion_tokens:,} completion tokens")


def cost_text(usage: Mapping[str, Any]) -> str:
    """`` | cost 0.0831 ...; per million tokens: ...``: a run's cost as its summary line gives it,
    when prices were given (``usage`` as in the JSON output or summary.json); else empty."""
    if usage.get("cost") is None or not isinstance(usage.get("prices"), dict):
        return ""
    prices = Prices.model_validate(usage["prices"])
    return f" | cost {money(usage['cost'])} from the tokens the server reported; {prices.describe()}"


#: Fields named in the summary line's near-miss clause, at most (summary.json has them all).
SHOWN_FIELDS = 3


def categories_text(c: CategoryCounts, rules_judge: bool) -> str:
    """``| 18 correct, 6 near misses (one field only: role 4, city 1), 4 missing, 3 spurious,
    1 duplicate``, and when there are near misses what to do about them: review them, or with the
    rules judge (strict: it misses synonyms) try the hybrid judge. Empty with nothing judged."""
    if not (c.correct or c.near_miss or c.missing or c.spurious or c.duplicate):
        return ""
    one = ", ".join(f"{name} {n}" for name, n in list(c.one_field.items())[:SHOWN_FIELDS])
    more = ", ..." if len(c.one_field) > SHOWN_FIELDS else ""
    near = f"{c.near_miss} near miss{'es' if c.near_miss != 1 else ''}" + (
        f" (one field only: {one}{more})" if one else "")
    text = (f" | {c.correct} correct, {near}, {c.missing} missing, {c.spurious} spurious, "
            f"{c.duplicate} duplicate{'s' if c.duplicate != 1 else ''}")
    if c.near_miss:
        text += ": review the near misses" + (" or try --judge hybrid" if rules_judge else "")
    return text


def run_notes(usage: Mapping[str, Any], conflicts: Mapping[str, int]) -> str:
    """`` | 13 retries (2 re-asks) | 3 settled by proof (5 candidates left out) | 4 gold facts
    promoted by a predicted fact's link``: what shaped the figures besides the verdicts, when
    there is any (issue #36: a newcomer saw none of it)."""
    out = ""
    retries, reasks = int(usage.get("retries", 0)), int(usage.get("reasks", 0))
    if retries:
        out += f" | {retries} retr{'ies' if retries != 1 else 'y'}" + (f" ({reasks} re-ask{'s' if reasks != 1 else ''})"
                                                                      if reasks else "")
    proved, left = int(usage.get("proved_different", 0)), int(usage.get("proof_left_out", 0))
    if proved or left:
        out += f" | {proved} settled by proof" + (f" ({left} candidate{'s' if left != 1 else ''} proved different "
                                                  "left out of questions)" if left else "")
    promoted = int(conflicts.get("gold_promoted_by_predicted", 0))
    if promoted:
        out += (f" | {promoted} gold fact{'s' if promoted != 1 else ''} promoted to TP by a predicted fact's "
                "link (gold_promoted_by_predicted)")
    return out


def summary_line(result: JudgeResult) -> str:
    m, u = result.metrics, result.usage
    by_type = count_categories({"gold_facts": result.gold_facts, "predicted_facts": result.predicted_facts,
                                "analysis": result.analysis})
    rules_judge = not (u.llm_calls or u.cache_hits or u.llm_calls_saved)  # no LLM asked: the rules judge
    return (f"gold: {m.tp_gold} TP, {m.fn} FN | predicted: {m.tp_predicted} TP, {m.fp} FP | "
            f"errors {m.errors} | out of scope {m.out_of_scope_gold}+{m.out_of_scope_predicted} | "
            f"P {fmt(m.precision)} R {fmt(m.recall)} F1 {fmt(m.f1)} | {usage_text(u)} | "
            f"{u.seconds:.2f}s{cost_text(u.model_dump())}{run_notes(u.model_dump(), result.conflicts)}"
            f"{categories_text(total_categories(by_type), rules_judge)}")


def price_usage(usage: Usage, prices: Prices | None) -> Usage:
    """``usage`` with the run's ``cost`` at ``prices`` (unchanged without prices)."""
    if prices is None:
        return usage
    return usage.model_copy(update=prices.usage_fields(
        usage.prompt_tokens, usage.cached_prompt_tokens, usage.completion_tokens))


class Pace:
    """Answered questions per second over a moving window, and an ETA that does not jump (issue
    #36: a 2-slot CPU server answering 0.4 questions/s showed ``0/s`` throughout, and the ETA
    jumped with each answer). The rate counts the answers of the last :attr:`WINDOW` seconds (all
    of them until the window is full); the ETA is the remaining questions at that rate, smoothed
    exponentially, and ``estimating`` until :attr:`MIN_ANSWERS` answers are in."""

    WINDOW = 30.0
    MIN_ANSWERS = 5
    #: The weight of a new ETA against the smoothed one: small enough that one fast or slow
    #: answer moves it little, large enough to follow a real change within ~10 answers.
    SMOOTHING = 0.2

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.started = clock()
        self.times: deque[tuple[float, int]] = deque()  # (time, answers then) per update
        self.answered = 0
        self.eta: float | None = None
        self._at = self.started  # when the ETA was last estimated

    def restart(self) -> None:
        self.started, self.answered, self.eta = self.clock(), 0, None
        self.times.clear()

    def add(self, answered: int, remaining: int) -> None:
        now = self.clock()
        self.answered += answered
        self.times.append((now, self.answered))
        while len(self.times) > 2 and now - self.times[1][0] >= self.WINDOW:
            self.times.popleft()  # keep one point at or before the window's start
        rate = self.rate()
        if self.answered < self.MIN_ANSWERS or not rate:
            return
        fresh = remaining / rate
        self.eta = fresh if self.eta is None else self.SMOOTHING * fresh + (1 - self.SMOOTHING) * self.eta
        self._at = now

    def rate(self) -> float:
        """Answers per second over the window (from the run's start until it is full)."""
        if not self.times:
            return 0.0
        now = self.clock()
        first_time, first_count = self.times[0]
        if now - self.started < self.WINDOW or len(self.times) < 2:
            first_time, first_count = self.started, 0
        seconds = now - first_time
        return (self.answered - first_count) / seconds if seconds > 0 else 0.0

    def rate_text(self) -> str:
        rate = self.rate()
        if rate and rate < 0.1:
            return f"{rate * 60:.1f}/min"
        return f"{rate:.1f}/s" if rate < 10 else f"{rate:.0f}/s"

    def eta_text(self) -> str:
        if self.eta is None:
            return "estimating"
        left = max(0.0, self.eta - (self.clock() - self._at))  # counted down between answers
        minutes, seconds = divmod(int(left + 0.5), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours}:{minutes:02d}:{seconds:02d}"


class ProgressBar:
    """The CLI's progress observer (:class:`~factjudge.evaluation.runner.RunProgress`).

    One bar over judge questions on stderr: questions/s, response-cache hits (LLM judges only),
    errors, a labelled ETA, and documents done when ``on_start`` gives a dataset's totals. Fits 80
    columns with the total in view. Silent when stderr is not a terminal (rich is then not even
    imported: a quiet run starts faster)."""

    def __init__(self, enabled: bool, llm: bool = True) -> None:
        self.llm = llm
        self.total = self.docs_total = self.docs_done = self.answered = self.cache_hits = self.errors = 0
        self.started = time.perf_counter()
        self.pace = Pace()
        self.bar: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        from rich.table import Column

        # the counts and the ETA never wrap or shrink; the details give way on a narrow terminal
        fixed = Column(no_wrap=True)
        self.bar = Progress(BarColumn(bar_width=10), MofNCompleteColumn(table_column=fixed),
                            TextColumn("questions", table_column=fixed),
                            TextColumn("{task.fields[info]}", table_column=Column(
                                no_wrap=True, overflow="ellipsis", ratio=1)),
                            TextColumn("ETA {task.fields[eta]}", table_column=fixed),
                            console=Console(stderr=True, highlight=False), transient=True, expand=True)
        self.task = self.bar.add_task("judging", total=0, info="", eta="estimating")

    def on_start(self, to_judge: int, reused: int, questions: int) -> None:
        self.docs_total, self.docs_done = to_judge + reused, reused
        self.started = time.perf_counter()
        self.pace.restart()
        self.total = questions
        self._refresh()

    def on_questions(self, count: int) -> None:
        if not self.docs_total:  # a dataset's exact total comes from on_start()
            self.total += count
        self._refresh()

    def on_verdict(self, direction: Direction, verdict: Verdict) -> None:
        self.on_answers(1, verdict.usage.cache_hits, verdict.status == "ERROR")

    def on_answers(self, answered: int, cache_hits: int = 0, errors: int = 0) -> None:
        """Questions answered where no verdict reaches this process (Ray workers): counted a
        document at a time."""
        self.answered += answered
        self.cache_hits += cache_hits
        self.errors += errors
        self.pace.add(answered, max(0, self.total - self.answered))
        self._refresh()

    def on_document(self, doc_id: str = "") -> None:
        self.docs_done += 1
        self._refresh()

    def _refresh(self) -> None:
        if self.bar is None:  # no terminal: keep the counts, skip the text
            return
        parts = [self.pace.rate_text()]
        if self.docs_total:
            parts.insert(0, f"{self.docs_done}/{self.docs_total} docs")
        if self.llm:
            parts.append(f"{self.cache_hits} cached")
        if self.errors:
            parts.append(f"[red]{self.errors} err[/red]")
        self.bar.update(self.task, total=self.total, completed=self.answered,
                        info="| " + " | ".join(parts), eta=self.pace.eta_text())

    def __enter__(self) -> ProgressBar:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def print_plan(plan: dict[str, Any], prices: Prices | None, max_tokens: int | None, reasoning: str = "full") -> None:
    """The dry run's report, on stdout: a table, then the same figures as JSON. An answer is
    estimated at the length measured for ``reasoning`` (:func:`answer_tokens`), within ``max_tokens``."""
    calls = plan["gold"]["calls"] + plan["predicted"]["calls"]
    before = plan["gold"]["prompt_tokens"] + plan["predicted"]["prompt_tokens"]
    after = (plan["gold"]["prompt_tokens_after_prefix_cache"]
             + plan["predicted"]["prompt_tokens_after_prefix_cache"])
    completion = calls * answer_tokens(reasoning, max_tokens)
    lines = [f"dry run: no call made; tokens counted with {plan['token_counter']}"]
    if "documents" in plan:
        lines.append(f"documents: {plan['documents']} to judge, {plan['reused_documents']} finished "
                     "already (reused)")
    for d in ("gold", "predicted"):
        st = plan[d]
        lines.append(f"{d:>9} pass: {st['calls']} calls, {st['cache_hits']} answered by the response "
                     f"cache, {st['decided_by_rules']} decided by rules, {st['shortlisted']} shortlisted, "
                     f"{st['too_large']} too large; prompt tokens {st['prompt_tokens']:,} "
                     f"({st['prompt_tokens_after_prefix_cache']:,} after provider prefix caching)")
    lines.append(f"    total: {calls} calls, {before:,} prompt tokens, ~{after:,} uncached after prefix "
                 f"caching, ~{completion:,} completion tokens (estimated)")
    plan = {**plan, "calls": calls, "prompt_tokens": before, "prompt_tokens_after_prefix_cache": after,
            "estimated_completion_tokens": completion}
    if prices is not None:
        # the prefix-cached tokens are discounted, not free: priced at --price-cached (or as input)
        cost = prices.cost(before, before - after, completion)
        uncached = prices.cost(before, 0, completion)
        lines.append(f"     cost: ~{money(cost)} with prefix caching, at most {money(uncached)} without "
                     f"({prices.describe()})")
        plan.update(estimated_cost=round(cost, 6), estimated_cost_without_prefix_cache=round(uncached, 6),
                    prices=prices.model_dump())
    typer.echo("\n".join(lines))
    typer.echo(json.dumps(plan))
