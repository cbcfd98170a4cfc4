"""The records table: best known value per math env (source, date, size, convention) and our certified improvements.

One table, read by the envs (``Problem.sota`` is the best known value held by others), by
``discoverygym list``, by ``discoverygym records`` and by the README. Each entry of ``ours`` is a
construction file under ``benchmarks/results/records/`` whose value ``discoverygym certify``
proves in exact arithmetic, with the certificate beside it and the command that produced it
(the files live in the repository, not in the installed package; ``tests/test_records.py``
certifies every one).

Sources (late 2026 survey of the public record): TTT-Discover = arXiv 2601.16175, repo
``test-time-training/discover`` (January 2026); SimpleTES = arXiv 2604.19341, repo
``wq-will/SimpleTES`` (April 2026); AlphaEvolve v2 = ``google-deepmind/alphaevolve_results``
(2025); EinsteinArena = its public leaderboard (2026; constructions not published).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Record:
    """The best known value of one problem, held by others (the value discoverygym measures against).

    Attributes:
        value: the best known value (as its source prints it).
        source: who holds it.
        date: when it was published (year, or year-month).
        size: the construction's size (pieces, points, circles, |A|).
        public: whether the construction is public (``"yes"`` with where, or ``"no"``).
        convention: the formula or tolerance the number depends on.
        others: earlier or public runners-up, ``(value, source and note)``.
        certified: the public construction's value as ``discoverygym certify`` proves it (its leading
            digits), where the construction is public; a record must beat both it and ``value``.
    """

    value: float
    source: str
    date: str
    size: str
    public: str
    convention: str
    others: tuple[tuple[float, str], ...] = ()
    certified: str = ""


@dataclass(frozen=True)
class Ours:
    """A discoverygym construction that certifiably beats :class:`Record`.

    Attributes:
        value: the certified value (leading digits of the exact one; the certificate has it all).
        file: construction file, relative to the repository root.
        certificate: certificate file written by ``discoverygym certify --out``.
        command: the command that produced the construction.
        date: when it was found.
    """

    value: str
    file: str
    certificate: str
    command: str
    date: str


@dataclass(frozen=True)
class Entry:
    """One row of the table: the record and our certified improvements (best first)."""

    env_id: str
    direction: str
    record: Record
    ours: tuple[Ours, ...] = field(default_factory=tuple)


_C5 = "C5 = (2/n) max_k (h ⋆ (1 − h))_k, h rescaled to Σh = n/2, values in [0, 1]"
_C1 = "C1 = 2n max_k (f * f)_k / (Σf)², f ≥ 0"
_C2 = ("C2 = L2² / (L1 L∞) of c = f * f; L2² of the piecewise-linear interpolant on M + 2 equispaced "
       "points (exact h/3 rule), L1 = Σ|c|/(M+1); the quadrature moves C2: TTT-Discover's 50,000-piece "
       "construction gives 0.959180 with this rule, 0.959368 with the trapezoid rule on c², 0.959372 with Simpson's")
_C3 = "C3 = 2n max_k |(f * f)_k| / (Σf)², f signed"
_CP = "Σr; containment and overlap within a 1e-12 tolerance (TTT-Discover/SimpleTES); certify says whether it holds strictly"

RECORDS: dict[str, Entry] = {e.env_id: e for e in (
    Entry("ErdosMinOverlap-v0", "min",
          Record(0.3808753, "TTT-Discover", "2026-01", "600 pieces", "yes", _C5,
                 ((0.380924, "AlphaEvolve v2"), (0.380927, "Haugland 2016, best human"),
                  (0.380949, "SimpleTES 2026 (claims 0.380856; its 4096-piece construction's true C5 is 0.380949)")),
                 "0.38087532321771874864"),
          (Ours("0.38087261902", "benchmarks/results/records/erdos_min_overlap_moonshot2.json",
                "benchmarks/results/records/certificates/erdos_min_overlap_moonshot2.cert.json",
                "discoverygym train ErdosMinOverlap-v0 --init benchmarks/results/records/erdos_min_overlap_moonshot.json "
                "--budget-s 600 --eval-workers 1 --run-dir runs/erdos2", "2026-12"),
           Ours("0.38087264683", "benchmarks/results/records/erdos_min_overlap_moonshot.json",
                "benchmarks/results/records/certificates/erdos_min_overlap_moonshot.cert.json",
                "discoverygym train ErdosMinOverlap-v0 --init erdos_ttt_discover.json --budget-s 1800 "
                "--run-dir runs/moon-erdos", "2026-12"),)),
    Entry("FirstAutocorrelation-v0", "min",
          Record(1.5028609, "EinsteinArena", "2026", "not published", "no", _C1,
                 ((1.5028629, "TTT-Discover 2026-01, 30,000 pieces (public)"), (1.50317, "AlphaEvolve v2, 1319 pieces"),
                  (1.50973, "Matolcsi–Vinuesa, best human")))),
    Entry("SecondAutocorrelation-v0", "max",
          Record(0.96272, "EinsteinArena", "2026", "1.6 M points", "no", _C2,
                 ((0.96102, "AlphaEvolve v2, 50,000 pieces"), (0.95918, "TTT-Discover 2026-01, 50,000 pieces (public)"),
                  (0.9015, "Boyer–Li, best human")))),
    Entry("ThirdAutocorrelation-v0", "min",
          Record(1.4536755, "SimpleTES", "2026-04", "400 pieces", "yes", _C3,
                 ((1.4556427953745406, "AlphaEvolve v2"),), "1.4536754655951828364"),
          (Ours("1.45365735909", "benchmarks/results/records/third_autocorrelation_slp2.json",
                "benchmarks/results/records/certificates/third_autocorrelation_slp2.cert.json",
                "python benchmarks/ac3_slp.py benchmarks/results/records/third_autocorrelation_slp.json --budget-s 300 "
                "--margin 0.01 --delta 1e-4 --out runs/ac3slp2", "2026-12"),
           Ours("1.45365737063", "benchmarks/results/records/third_autocorrelation_slp.json",
                "benchmarks/results/records/certificates/third_autocorrelation_slp.cert.json",
                "python benchmarks/ac3_slp.py ac3_simpletes.json --budget-s 720 --out runs/ac3slp", "2026-12"),)),
    Entry("CirclePacking-26-v0", "max",
          Record(2.6359830849, "AlphaEvolve v2", "2025", "26 circles", "yes", _CP,
                 ((2.635977, "TTT-Discover 2026-01 (public)"), (2.634, "best human")))),
    Entry("CirclePacking-32-v0", "max",
          Record(2.9395727712, "AlphaEvolve v2", "2025", "32 circles", "yes", _CP,
                 ((2.9395727712, "SimpleTES 2026-04 (public; valid only within the 1e-12 tolerance)"),
                  (2.936, "best human")), "2.93957277121014709")),
    Entry("SumDifference-v0", "max",
          Record(1.1448869, "SimpleTES", "2026-04", "|A| = 506", "yes",
                 "C(A) = log(|A+A|/|A|) / log(|A−A|/|A|)", ((1.143975, "prior record per SimpleTES"),),
                 "1.1448868597133133858")),
    Entry("SumDifference-Large-v0", "max",
          Record(1.1448869, "SimpleTES", "2026-04", "|A| = 506 (largest value known to us for a set of any size)", "yes",
                 "C(A) = log(|A+A|/|A|) / log(|A−A|/|A|), any |A|, |a| ≤ 10^6 (SimpleTES's rules less its 512 cap)",
                 ((1.143975, "prior record per SimpleTES"),), "1.1448868597133133858"),
          (Ours("1.15942600444", "benchmarks/results/records/sum_difference_lattice.json",
                "benchmarks/results/records/certificates/sum_difference_lattice.cert.json",
                "python benchmarks/sum_difference_lattice.py --L 1000,10000,100000 --out runs/sdlattice", "2026-12"),)),
    Entry("Hadamard-29-v0", "max",
          Record(0.741985, "SimpleTES", "2026-04", "29 x 29", "yes",
                 "|det H| / 29^(29/2), det exact", (), "0.74198541327436737194")),
)}


def sota(env_id: str, best_human: float | None = None) -> dict:
    """The ``Problem.sota`` dict of a math env from :data:`RECORDS`: ``value``, ``source`` (with date
    and size), and ``best_human`` when given."""
    r = RECORDS[env_id].record
    out: dict = {"value": r.value, "source": f"{r.source} {r.date}, {r.size}"}
    if best_human is not None:
        out["best_human"] = best_human
    return out


def best_ours(env_id: str) -> Ours | None:
    """Our best certified improvement for ``env_id``, or None."""
    entry = RECORDS.get(env_id)
    return entry.ours[0] if entry and entry.ours else None


def as_rows() -> list[dict]:
    """The table as JSON-safe rows (``discoverygym records --json``)."""
    rows = []
    for e in RECORDS.values():
        r = e.record
        rows.append({
            "env_id": e.env_id, "better": "lower" if e.direction == "min" else "higher",
            "best_known": r.value, "source": r.source, "date": r.date, "size": r.size, "public": r.public,
            "convention": r.convention, "others": [{"value": v, "source": s} for v, s in r.others],
            "ours": [vars(o) for o in e.ours],
        })
    return rows
