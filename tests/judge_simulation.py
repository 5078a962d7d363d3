"""A synthetic extractor judged by a simulated judge of known error rates, with a calibration of
that judge: what the judge-corrected figures are checked on (tests/unit/core/test_correction.py,
benchmarks/judge_correction.py).

Per document: 2-10 gold facts, each extracted right with probability ``r0``; a gold fact missed has
a near-miss prediction with probability ``h``; hallucinated predictions (like nothing in the gold),
``s`` per gold fact. The judge links a true pair with probability ``r`` (its recall) and a near-miss
pair with probability ``q``; it never links a hallucination. The calibration labels pairs drawn from
the same population of pairs (true pairs and near-miss pairs), so its link precision and recall are
the judge's on this data: the method's assumptions hold. The extractor's true figures: precision
``r0 / (r0 + h (1 - r0) + s)``, recall ``r0``.
"""
import random

from factjudge.core.correction import JudgeErrors
from factjudge.core.metrics import f1_score


def _binomial(rng, n, p):
    return sum(rng.random() < p for _ in range(n))


def simulation(seed, docs=80, labels=200):
    """``(keys, errors, true_f1, params)``: per-document (TP predicted, FP, TP gold, FN) as the
    simulated judge scores them, the calibration's counts, the extractor's true F1, and the
    parameters drawn for this seed (``r0``, ``h``, ``s``, ``r``, ``q``)."""
    rng = random.Random(seed)
    r0, h, s = rng.uniform(0.4, 0.9), rng.uniform(0.2, 0.8), rng.uniform(0.0, 0.3)
    r, q = rng.uniform(0.6, 0.95), rng.uniform(0.05, 0.4)
    keys = []
    for _ in range(docs):
        n = rng.randint(2, 10)
        right = _binomial(rng, n, r0)
        near = _binomial(rng, n - right, h)
        made_up = _binomial(rng, n, s)
        linked = _binomial(rng, right, r) + _binomial(rng, near, q)
        keys.append((linked, right + near + made_up - linked, linked, n - linked))
    share_true = r0 / (r0 + h * (1 - r0))  # true pairs among the pairs a judge could link
    cells = [0, 0, 0, 0]  # tp, fp, fn, tn
    for _ in range(labels):
        match = rng.random() < share_true
        link = rng.random() < (r if match else q)
        cells[(not match) + 2 * (not link)] += 1
    true_f1 = f1_score(r0 / (r0 + h * (1 - r0) + s), r0)
    return keys, JudgeErrors(*cells), true_f1, {"r0": r0, "h": h, "s": s, "r": r, "q": q}
