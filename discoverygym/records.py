"""The records table: the best known value per math env, with every public source, and our constructions.

One table, read by the envs (``Problem.sota`` is the best known value held by others), by
``discoverygym list``, ``discoverygym records``, ``certify`` and the README (a test checks the
README's list against it). The answer to "did it beat the record?" is :mod:`discoverygym.judgment`,
which compares an exact value with :attr:`Record.exact` (the record's certified value, or its
printed digits when its construction is not public).

Each entry of ``ours`` is a construction file under ``benchmarks/results/records/`` whose value
``discoverygym certify`` proves in exact arithmetic, with the certificate beside it, the command that
produced it and a truthful label: it is called a *record* only when ``certify`` shows it beating the
best known value under the same rules (``Ours.beats_best_known``; ``tests/test_records.py`` checks
the flag against ``certify`` on every stored file).

Sources (survey of the public record as of :data:`AS_OF`): TTT-Discover = arXiv 2601.16175, repo
``test-time-training/discover`` (January 2026); SimpleTES = arXiv 2604.19341, repo
``wq-will/SimpleTES`` (April 2026); Together AI = repo ``togethercomputer/EinsteinArena-new-SOTA``
(March 2026); AlphaEvolve v2 = ``google-deepmind/alphaevolve_results`` (2025); EinsteinArena = its
public leaderboard (2026; constructions not published); Numaro = numaro.tech, "circle packing in a
unit square" (2026); Lin–Li = arXiv 2607.27199 (July 2026); Tao = T. Tao's optimization-constants
table (problem 1b: Erdős; constant 3d: sum-difference).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from discoverygym.types import Direction

#: the date of the survey of the public record behind every row ("as of")
AS_OF = "2026-12"


@dataclass(frozen=True)
class Record:
    """The best known value of one problem, held by others (the value discoverygym measures against).

    Attributes:
        value: the best known value as its source prints it (``Problem.sota["value"]``, ``list``).
        source: who holds it.
        date: when it was published (year, or year-month).
        size: the construction's size (pieces, points, circles, |A|).
        public: whether the construction is public (``"yes, <where>"`` or ``"no"``).
        convention: the formula or tolerance the number depends on.
        others: earlier values and runners-up, ``(value, source and note)``, best first.
        exact: the value the judgment compares with (:func:`discoverygym.judgment.judge`): the public
            construction's value as ``discoverygym certify`` proves it (its first 20 or more digits), or
            ``""`` when only the printed ``value`` is known (then the judgment allows for its rounding).
        public_best: where the record's construction is not public, the best public construction:
            ``(value, source and size)``; ``None`` otherwise.
        kind: ``"record"`` (the best known value under this env's rules) or ``"reference"`` (no
            published entry under this env's rules, which are our own variant: ``value`` is the best
            published value that meets them, shown for reference; beating it is not a record).
    """

    value: float
    source: str
    date: str
    size: str
    public: str
    convention: str
    others: tuple[tuple[float, str], ...] = ()
    exact: str = ""
    public_best: tuple[str, str] | None = None
    kind: str = "record"


@dataclass(frozen=True)
class Ours:
    """A discoverygym construction stored under ``benchmarks/results/records/``, named for what it is.

    Attributes:
        value: the certified value (leading digits of the exact one; the certificate has it all).
        file: construction file, relative to the repository root.
        certificate: certificate file written by ``discoverygym certify --out``.
        command: the command that produced the construction.
        date: when it was found.
        label: what it is, e.g. ``"record"``, ``"beats TTT-Discover's 0.3808753"``, ``"best public
            construction"``, ``"value under our own variant"``.
        beats_best_known: whether ``certify`` shows it beating :class:`Record` under the same rules
            (then, and only then, ``label`` says ``"record"``).
    """

    value: str
    file: str
    certificate: str
    command: str
    date: str
    label: str
    beats_best_known: bool


@dataclass(frozen=True)
class Entry:
    """One row of the table: the env, its :class:`~discoverygym.types.Direction` (a ``str`` enum:
    ``"min"``/``"max"``), the record and our constructions (best first)."""

    env_id: str
    direction: Direction
    record: Record
    ours: tuple[Ours, ...] = field(default_factory=tuple)


_C5 = "C5 = (2/n) max_k (h ⋆ (1 − h))_k, h rescaled to Σh = n/2, values in [0, 1]"
_C1 = "C1 = 2n max_k (f * f)_k / (Σf)², f ≥ 0"
_C2 = ("C2 = L2² / (L1 L∞) of c = f * f; L2² of the piecewise-linear interpolant on M + 2 equispaced "
       "points (exact h/3 rule), L1 = Σ|c|/(M+1); the quadrature moves C2: TTT-Discover's 50,000-piece "
       "construction gives 0.959180 with this rule, 0.959368 with the trapezoid rule on c², 0.959372 with Simpson's")
_C3 = ("C3′ = 2n max_k |(f * f)_k| / (Σf)², f signed: AlphaEvolve's C3′ with max|f∗f|; EinsteinArena scores "
       "|max f∗f|, the same number for these constructions (the peak of |f∗f| is positive)")
_CP = "Σr; containment and overlap within a 1e-12 tolerance (TTT-Discover/SimpleTES); certify says whether it holds strictly"
_SD = "C(A) = log(|A+A|/|A|) / log(|A−A|/|A|), |a| ≤ 10^6"
_LIN_LI = ("Lin–Li (arXiv 2607.27199, 2026-07): the supremum over all finite sets is exactly 2, with explicit "
           "(astronomically large) sets above any value below 2")
_SD_EARLIER = ((1.143975, "prior record per SimpleTES"), (1.125944, "Penman–Wells, Integers 13, 2013"),
               (1.1219, "AlphaEvolve, public 309-element set"), (1.0598, "Freiman–Pigaev"))
_RECORDS_DIR = "benchmarks/results/records/"

RECORDS: dict[str, Entry] = {e.env_id: e for e in (
    Entry("ErdosMinOverlap-v0", Direction.MIN,
          Record(0.3808703106, "Together AI", "2026-03", "600 pieces",
                 "yes, togethercomputer/EinsteinArena-new-SOTA erdos-minimum-overlap/solutions/together_ai_2026.py",
                 _C5,
                 ((0.380868, ("SimpleTES 2026-04, listed in Tao's table (problem 1b); no public construction "
                              "computing to it was found: SimpleTES's released 4096-piece one computes to 0.380949")),
                  (0.3808753, "TTT-Discover 2026-01, 600 pieces (public)"), (0.380924, "AlphaEvolve v2"),
                  (0.380927, "Haugland 2016, best human")),
                 "0.380870310586219903338258036188"),
          (Ours("0.38087261902", _RECORDS_DIR + "erdos_min_overlap_moonshot2.json",
                _RECORDS_DIR + "certificates/erdos_min_overlap_moonshot2.cert.json",
                "discoverygym train ErdosMinOverlap-v0 --init benchmarks/results/records/erdos_min_overlap_moonshot.json "
                "--budget-s 600 --eval-workers 1 --run-dir runs/erdos2", "2026-12",
                "beats TTT-Discover's 0.3808753; not a record (Together AI's 0.3808703106 is 2.3e-6 lower)", False),
           Ours("0.38087264683", _RECORDS_DIR + "erdos_min_overlap_moonshot.json",
                _RECORDS_DIR + "certificates/erdos_min_overlap_moonshot.cert.json",
                "discoverygym train ErdosMinOverlap-v0 --init erdos_ttt_discover.json --budget-s 1800 "
                "--run-dir runs/moon-erdos", "2026-12", "beats TTT-Discover's 0.3808753; not a record", False))),
    Entry("FirstAutocorrelation-v0", Direction.MIN,
          Record(1.5028609, "EinsteinArena", "2026", "size not stated", "no", _C1,
                 ((1.50286286, "Together AI 2026-03, 30,000 pieces (public)"),
                  (1.5028629, "TTT-Discover 2026-01, 30,000 pieces (public)"), (1.50317, "AlphaEvolve v2, 1319 pieces"),
                  (1.50973, "Matolcsi–Vinuesa, best human")),
                 public_best=("1.50286286", "Together AI 2026-03, 30,000 pieces")),
          (Ours("1.50286265850", _RECORDS_DIR + "first_autocorrelation_lse.json",
                _RECORDS_DIR + "certificates/first_autocorrelation_lse.cert.json",
                "python benchmarks/ac1_lse.py ac1_ttt_discover.json --budget-s 420 --out runs/ac1lse", "2026-12",
                "best public construction (below Together AI's 1.50286286); not a record (EinsteinArena's "
                "unpublished 1.5028609 is 1.8e-6 lower)", False),)),
    Entry("SecondAutocorrelation-v0", Direction.MAX,
          Record(0.96272, "EinsteinArena", "2026", "1.6 M points", "no", _C2,
                 ((0.96102, "AlphaEvolve v2, 50,000 pieces (public)"),
                  (0.95918, "TTT-Discover 2026-01, 50,000 pieces (public)"), (0.9015, "Boyer–Li, best human")),
                 public_best=("0.96102", "AlphaEvolve v2, 50,000 pieces"))),
    Entry("ThirdAutocorrelation-v0", Direction.MIN,
          Record(1.4536755, "SimpleTES", "2026-04", "400 pieces", "yes, wq-will/SimpleTES best_results", _C3,
                 ((1.45404, "EinsteinArena leader, about"), (1.454555, "Together AI 2026-03"),
                  (1.45485, "MLEvolve"), (1.4556427953745406, "AlphaEvolve v2")),
                 "1.4536754655951828364"),
          (Ours("1.45365735909", _RECORDS_DIR + "third_autocorrelation_slp2.json",
                _RECORDS_DIR + "certificates/third_autocorrelation_slp2.cert.json",
                "python benchmarks/ac3_slp.py benchmarks/results/records/third_autocorrelation_slp.json --budget-s 300 "
                "--margin 0.01 --delta 1e-4 --out runs/ac3slp2", "2026-12", "record", True),
           Ours("1.45365737063", _RECORDS_DIR + "third_autocorrelation_slp.json",
                _RECORDS_DIR + "certificates/third_autocorrelation_slp.cert.json",
                "python benchmarks/ac3_slp.py ac3_simpletes.json --budget-s 720 --out runs/ac3slp", "2026-12",
                "record (superseded by ours above)", True))),
    Entry("CirclePacking-26-v0", Direction.MAX,
          Record(2.6359830853, "Numaro", "2026", "26 circles",
                 "reported on numaro.tech (coordinates not checked here)",
                 _CP + "; Numaro's value holds under a stricter feasibility tolerance",
                 ((2.6359830849, "AlphaEvolve v2 2025 (public)"), (2.635977, "TTT-Discover 2026-01 (public)"),
                  (2.634, "best human")),
                 public_best=("2.6359830849", "AlphaEvolve v2 2025"))),
    Entry("CirclePacking-32-v0", Direction.MAX,
          Record(2.9395727712, "AlphaEvolve v2", "2025", "32 circles", "yes, google-deepmind/alphaevolve_results", _CP,
                 ((2.9395727712, "SimpleTES 2026-04 (public; valid only within the 1e-12 tolerance)"),
                  (2.936, "best human")), "2.93957277121014709")),
    Entry("SumDifference-v0", Direction.MAX,
          Record(1.1448869, "SimpleTES", "2026-04", "|A| = 506", "yes, wq-will/SimpleTES best_results",
                 _SD + ", 2 ≤ |A| ≤ 512 (SimpleTES's rules); without the cap: " + _LIN_LI,
                 _SD_EARLIER, "1.1448868597133133858")),
    Entry("SumDifference-Large-v0", Direction.MAX,
          Record(1.1448869, "SimpleTES", "2026-04", "|A| = 506, under its 512 cap", "yes, wq-will/SimpleTES best_results",
                 _SD + ", any |A|: our own variant (SimpleTES's rules less the 512 cap), no published entry; the "
                 "value shown is SimpleTES's capped record, for reference; over all finite sets " + _LIN_LI,
                 ((2.0, "supremum over all finite sets, Lin–Li 2026-07 (sets far beyond |a| ≤ 10^6)"), *_SD_EARLIER),
                 "1.1448868597133133858", kind="reference"),
          (Ours("1.15942600444", _RECORDS_DIR + "sum_difference_lattice.json",
                _RECORDS_DIR + "certificates/sum_difference_lattice.cert.json",
                "python benchmarks/sum_difference_lattice.py --L 1000,10000,100000 --out runs/sdlattice", "2026-12",
                "value under our own variant (|A| = 100,898; no published entry; not a record)", False),)),
    Entry("Hadamard-29-v0", Direction.MAX,
          Record(0.741985, "SimpleTES", "2026-04", "29 x 29", "yes, wq-will/SimpleTES best_results",
                 "|det H| / 29^(29/2), det exact", (), "0.74198541327436737194")),
)}


def sota(env_id: str, best_human: float | None = None) -> dict:
    """The ``Problem.sota`` dict of a math env from :data:`RECORDS`: ``value`` (the printed best known
    value, a float), ``source`` (with date and size; a ``"reference"`` row says so), and ``best_human``
    when given. Judge against the record with :mod:`discoverygym.judgment`, which uses the exact value."""
    r = RECORDS[env_id].record
    out: dict = {"value": r.value, "source": f"{r.source} {r.date}, {r.size}"
                 + ("; for reference: no published entry under this variant's rules" if r.kind == "reference" else "")}
    if best_human is not None:
        out["best_human"] = best_human
    return out


def best_ours(env_id: str) -> Ours | None:
    """Our best stored construction for ``env_id`` (a record or not: see its ``label``), or None."""
    entry = RECORDS.get(env_id)
    return entry.ours[0] if entry and entry.ours else None


def ours_text(env_id: str) -> str:
    """``"; ours 0.38087261902 (beats TTT-Discover's 0.3808753; not a record ...)"`` where discoverygym
    stores a construction for ``env_id``, else ``""`` (``list``'s source column and the README's list)."""
    ours = best_ours(env_id)
    return f"; ours {ours.value} ({ours.label}, certified)" if ours else ""


def short_label(ours: Ours) -> str:
    """``ours.label`` up to its first ``;`` or parenthesis (``"beats TTT-Discover's 0.3808753"``)."""
    return ours.label.split(";")[0].split(" (")[0]


def readme_cell(env_id: str) -> str:
    """The README list's "record (source)" cell of ``env_id``, derived from the table (a test checks
    that the README holds exactly this): the best known value with source, date, size and whether it
    is public; the best public construction where different; ours, named for what it is."""
    e = RECORDS[env_id]
    r = e.record
    head = "no published entry for this variant; for reference " if r.kind == "reference" else ""
    cell = f"{head}{r.value} ({r.source} {r.date}, {r.size}" + (", not public" if r.public == "no" else "") + ")"
    if r.public_best:
        cell += f"; best public by others {r.public_best[0]} ({r.public_best[1]})"
    ours = best_ours(env_id)
    if ours:
        cell += f"; **ours {ours.value}**, {short_label(ours)}, certified"
    return cell


def as_rows() -> list[dict]:
    """The table as JSON-safe rows (``discoverygym records --json``): per env ``best_known`` (the
    printed value), ``exact`` (the value the judgment uses), source, date, size, public, convention,
    ``kind``, ``public_best``, ``others``, ``ours`` (with ``label`` and ``beats_best_known``) and ``as_of``."""
    rows = []
    for e in RECORDS.values():
        r = e.record
        rows.append({
            "env_id": e.env_id, "better": e.direction.comparative,
            "best_known": r.value, "exact": r.exact or repr(r.value), "source": r.source, "date": r.date,
            "size": r.size, "public": r.public, "convention": r.convention, "kind": r.kind,
            "public_best": None if r.public_best is None else {"value": r.public_best[0], "source": r.public_best[1]},
            "others": [{"value": v, "source": s} for v, s in r.others],
            "ours": [vars(o) for o in e.ours], "as_of": AS_OF,
        })
    return rows
