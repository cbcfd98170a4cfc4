"""``discoverygym certify ENV FILE``: prove a construction's value in exact arithmetic, write a certificate.

Exit codes: 0 certified (the construction is valid; the value is proved), 1 the construction is
invalid (the broken rule is printed), 2 usage error (unknown env, unreadable file, no certifier).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from discoverygym.cli.common import UsageError, check_env, console_text
from discoverygym.io import atomic_write_json

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add the ``certify`` sub-command to the ``discoverygym`` parser."""
    p = sub.add_parser(
        "certify",
        help="prove a construction's value in exact arithmetic (no float64) and write a certificate",
        description="Read a construction file's numbers as exact decimals and prove its value: Erdős C5 "
        "and AC1/AC3 as exact fractions (integer cross-/autoconvolution over every shift), AC2 exactly "
        "with its stated quadrature, circle packings with containment and non-overlap in integers "
        "(squared distances; says whether the 1e-12 tolerance is needed), sum-difference and Hadamard "
        "from exact integers (the logarithm / square root in a rigorous interval; sum-difference sets "
        "of any size, SumDifference-Large-v0, by exact big-integer convolution). Compares the exact value "
        "with the best known one's exact value (`discoverygym records`; ties within the 1e-12 relative "
        "tolerance; the same judgment train and search print) and with any value the file claims "
        "(claimed/value/score), and says when a claim is overstated. Exit codes: 0 certified, 1 the "
        "construction is invalid, 2 usage error. FILE may be a run's best.json or its run directory. Example: discoverygym certify ErdosMinOverlap-v0 "
        "benchmarks/results/records/erdos_min_overlap_moonshot.json --out erdos.cert.json",
    )
    p.add_argument("env_id", help="a math env (see `discoverygym records`)")
    p.add_argument("file", help="construction JSON (bare, or an object with 'construction' and maybe a claim), "
                   "a run's best.json, or a run directory (its best.json)")
    p.add_argument("--json", action="store_true", help="print the certificate (without its inputs) as JSON")
    p.add_argument("--out", metavar="CERT", help="write the full certificate (with the exact inputs) to CERT")


def run(args: argparse.Namespace) -> int:
    """Run ``discoverygym certify``; returns the exit code.

    Raises:
        UsageError: unknown env, unreadable or non-JSON file, an object without ``construction``.
    """
    from discoverygym.rewards.certify import CERTIFIERS, certify, read_exact_json

    check_env(args.env_id)
    if args.env_id not in CERTIFIERS:
        raise UsageError(f"no certifier for {args.env_id!r}; certifiable envs: {', '.join(CERTIFIERS)}")
    args.file = _run_best(args.file)
    out = _out_path(args.out, args.file) if args.out else None  # refused before any work is done
    try:  # opened once, checked on the descriptor (a regular file within the size limit), then read
        data = read_exact_json(args.file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        _check_run_env(data, args.env_id, args.file)
        cert = certify(args.env_id, data, source=str(args.file))
    except ValueError as exc:  # CertifyLimit included: the inputs cost more than certify's limits
        raise UsageError(f"{args.file}: {exc}") from None
    if out is not None:
        try:
            atomic_write_json(out, cert)
        except OSError as exc:
            raise UsageError(f"--out {args.out}: cannot write the certificate there ({exc.strerror or exc})") from None
    if args.json:
        print(json.dumps({k: v for k, v in cert.items() if k != "inputs"}))
    else:
        Console().print(_table(cert))
        if args.out:
            print(f"certificate written to {args.out}")
    return 0 if cert["valid"] else 1


def _out_path(out: str, source: str) -> Path:
    """``--out CERT`` checked before any work: a new or regular file in an existing directory, and not
    the input file itself (issue 52, #6, #7). The certificate is then written atomically (a temporary
    file beside it, renamed over it), so an existing CERT is either kept or replaced whole.

    Raises:
        UsageError: CERT is the input file (or a link to it), a directory, a FIFO, device or other
            non-regular file, or its parent is not a directory (one line).
    """
    import os
    import stat

    path = Path(out)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:  # a path under a regular file (ENOTDIR), a loop, no permission
        raise UsageError(f"--out {out}: {exc.strerror}") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"--out {out} is a directory; give a file name for the certificate")
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"--out {out} is not a regular file; give a file name for the certificate")
        try:
            same = os.path.samefile(path, source)
        except OSError:
            same = False
        if same:
            raise UsageError(f"--out {out} is the input file {source}; the certificate would replace the "
                             "construction (give another file)")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"--out {out}: {parent} is not a directory")
    return path


def _run_best(file: str) -> str:
    """``FILE``, or ``FILE/best.json`` when ``FILE`` is a run directory (``train``/``search --run-dir``).

    Raises:
        UsageError: a directory without ``best.json``.
    """
    path = Path(file)
    if not path.is_dir():
        return file
    if not (path / "best.json").exists():
        raise UsageError(f"{file} is a directory without best.json (certify reads a construction file, a run's "
                         "best.json or a run directory)")
    return str(path / "best.json")


def _check_run_env(data: object, env_id: str, file: str) -> None:
    """Refuse a run's ``best.json`` of another env (its ``env_id`` key).

    Raises:
        ValueError: the file names a different env.
    """
    named = data.get("env_id") if isinstance(data, dict) else None
    if isinstance(named, str) and named != env_id:
        raise ValueError(f"the file is a result of {named}, not {env_id}: run `discoverygym certify {named} {file}`")


def _table(cert: dict) -> Table:
    """The certificate as a two-column table for people (the file's name, its claims and the broken rule,
    which may quote the file, as text: never rich markup)."""
    table = Table(title=f"certificate: {cert['env_id']} — {console_text(Path(cert['source']).name)}", show_header=False)
    if not cert["valid"]:
        table.add_row("valid", "[red]no[/]")
        table.add_row("error", console_text(str(cert["error"])))
    else:
        table.add_row("valid", "[green]yes[/] (exact arithmetic)")
        table.add_row("certified value", cert["value"])
        table.add_row("formula", cert["formula"])
        table.add_row("checked by", cert["method"])
        if cert["convention"]:
            table.add_row("convention", cert["convention"])
        verdict = cert["verdict"]
        style = "[green]" if verdict["is_record"] else ""
        table.add_row("new record", f"{style}{'yes' if verdict['is_record'] else 'no'}{'[/]' if style else ''}: "
                      f"{verdict['text']}")
    for claim in cert.get("claims") or ([cert["claim"]] if cert.get("claim") else []):
        style = {"overstated": "[red]", "consistent": "[green]", "unreadable": "[red]"}.get(claim["verdict"], "")
        said = f"{console_text(str(claim['claimed']))} ({console_text(str(claim.get('key', 'claimed')))})"
        text = f"{said}: {style}{claim['verdict']}[/]" if style else f"{said}: {claim['verdict']}"
        if claim["verdict"] == "overstated":
            from discoverygym.records import RECORDS

            bound = "at most" if RECORDS[cert["env_id"]].direction == "min" else "at least"
            text += (f" — read as a bound (the value is {bound} the claim), it is not proved: the construction's "
                     f"true value is {cert['value']}")
        elif claim["verdict"] == "unreadable":
            text += " — not a number within certify's bounds, so not judged"
        table.add_row("file's claim", text)
    table.add_row("certified by", cert["certified_by"])
    return table
