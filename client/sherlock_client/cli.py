"""The `sherlock` command: `run`, `evaluate`, `gate` and `verify` (docs/client-cli.md).

Exit codes, the same for every command: 0 passed (published, for `verify`), 1 failed (blocked,
not published), 2 incomplete (missing, errored or unscored blocking results; no verdict in
time), 3 a configuration or infrastructure error (bad key, unknown dataset or agent, the
server unreachable, a task that cannot be imported). The server is named by `--url` or
`SHERLOCK_URL`, the key by `SHERLOCK_API_KEY` (never on the command line, where `ps` shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from sherlock_client import flow
from sherlock_client.api import Client
from sherlock_client.attestation import (
    AttestationRefused,
    config_hash,
    public_keys,
    verify_attestation,
)
from sherlock_client.http import ApiError
from sherlock_client.result import (
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_PASSED,
    Result,
    json_text,
    junit_xml,
    markdown,
    print_result,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sherlock",
        description="Run your agent on a Sherlock dataset and gate deploys on the verdict.",
    )
    parser.add_argument("--url", default=os.environ.get("SHERLOCK_URL"), help="$SHERLOCK_URL")
    parser.add_argument(
        "--http-timeout", type=float, default=30.0, help="seconds per API call (30)"
    )
    parser.add_argument("--retries", type=int, default=6, help="retries per API call (6)")
    commands = parser.add_subparsers(dest="command", required=True)

    def outputs(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--junit", type=Path, help="write JUnit XML here")
        sub.add_argument("--json", type=Path, help="write the full result as JSON here")
        sub.add_argument("--markdown", type=Path, help="write a pull request comment here")
        sub.add_argument("--policy", type=int, help="judge under this policy's thresholds")
        sub.add_argument(
            "--wait", type=float, default=1800.0, help="seconds to await the verdict (1800)"
        )

    run = commands.add_parser("run", help="your task function on every case, scored by Sherlock")
    run.add_argument("--agent")
    run.add_argument("--dataset")
    run.add_argument("--task", required=True, help="package.module:function")
    run.add_argument(
        "--version",
        help="version name (default: the task's entrypoint at the commit, "
        "module:function@<12 characters of the sha>, -dirty)",
    )
    run.add_argument("--repetitions", type=int, default=1)
    run.add_argument("--concurrency", type=int, default=8)
    run.add_argument("--timeout", type=float, default=60.0, help="seconds per case (60)")
    run.add_argument("--resume", type=int, metavar="RUN", help="continue this run")
    run.add_argument(
        "--purpose",
        choices=["auto", "manual", "gate"],
        default="auto",
        help="auto (default): fulfil the version's waiting gate run on the dataset if there "
        "is one, else start a new run; manual: always a new run; gate: only the gate run",
    )
    outputs(run)

    evaluate = commands.add_parser("evaluate", help="a run Sherlock executes itself, awaited")
    evaluate.add_argument("--agent", required=True)
    evaluate.add_argument(
        "--version", required=True, help="a version's name, or v<number> for its number"
    )
    evaluate.add_argument("--dataset", required=True)
    evaluate.add_argument("--repetitions", type=int, default=1)
    outputs(evaluate)

    gate = commands.add_parser("gate", help="request publication and await the decision")
    gate.add_argument("--agent", required=True)
    gate.add_argument(
        "--version",
        help="a version's name, or v<number> (default: the name `sherlock run --task` gives)",
    )
    gate.add_argument("--task", help="package.module:function, to fulfil client gate runs")
    gate.add_argument("--concurrency", type=int, default=8)
    gate.add_argument("--timeout", type=float, default=60.0, help="seconds per case (60)")
    gate.add_argument("--json", type=Path, help="write the decision as JSON here")
    gate.add_argument("--policy", type=int, help=argparse.SUPPRESS)
    gate.add_argument("--wait", type=float, default=3600.0, help="seconds to await (3600)")

    verify = commands.add_parser(
        "verify",
        help="exit 0 only if the version is published (or, offline, if its attestation holds)",
    )
    verify.add_argument("--agent", help="the agent (asking the server)")
    verify.add_argument(
        "--attestation", type=Path, help="an attestation file: verify it offline, no server"
    )
    verify.add_argument(
        "--public-key",
        type=Path,
        help="the PEM public key, or the server's keys file (attestation-keys.json)",
    )
    fetch = commands.add_parser(
        "attestation", help="write the version's newest release attestation to a file"
    )
    fetch.add_argument("--agent", required=True)
    fetch.add_argument("--version", help="a version's name, or v<number>")
    fetch.add_argument("--task", help="package.module:function: names the version")
    fetch.add_argument("--output", type=Path, required=True, help="where to write it")
    source = verify.add_mutually_exclusive_group()
    source.add_argument(
        "--config", type=Path, help='the configuration to deploy: {"adapter": ..., "config": ...}'
    )
    source.add_argument("--config-hash", help="or its SHA-256, as the version page shows it")
    verify.add_argument("--max-age", type=float, help="days: refuse an older attestation")
    verify.add_argument(
        "--version",
        help="a version's name, or v<number> (default: the name `sherlock run --task` gives)",
    )
    verify.add_argument(
        "--task", help="package.module:function: names the version as `sherlock run` does"
    )
    return parser


def _write(path: Path | None, text: str) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _report(result: Result, args: argparse.Namespace) -> int:
    print_result(result, sys.stdout, rich=sys.stdout.isatty())
    _write(args.junit, junit_xml(result))
    _write(args.json, json_text(result))
    _write(args.markdown, markdown(result))
    return result.exit_code


def _announce(run: dict[str, Any]) -> None:
    work = f", {run['work']} to do" if "work" in run else ""
    print(
        f"sherlock: run {run['id']} {run.get('url', '')}{work} "
        f"(if interrupted: sherlock run --task ... --resume {run['id']})",
        file=sys.stderr,
        flush=True,
    )


def _verify_offline(args: argparse.Namespace) -> int:
    """`sherlock verify --attestation FILE --public-key KEY`: 0 only when the attestation
    holds, else 1 and its one-line reason (3 when a file cannot be read)."""
    if args.public_key is None:
        print("sherlock: --attestation needs --public-key", file=sys.stderr)
        return EXIT_ERROR
    try:
        envelope = json.loads(args.attestation.read_text(encoding="utf-8"))
        keys = public_keys(args.public_key.read_bytes(), envelope)
        expected = args.config_hash
        if args.config is not None:
            given = json.loads(args.config.read_text(encoding="utf-8"))
            expected = config_hash(given.get("adapter"), given.get("config"))
    except (OSError, ValueError, AttributeError) as exc:
        print(f"sherlock: {exc}", file=sys.stderr)
        return EXIT_ERROR
    max_age = timedelta(days=args.max_age) if args.max_age is not None else None
    refusal = None
    for key in keys:
        try:
            statement = verify_attestation(envelope, key, config_hash=expected, max_age=max_age)
        except AttestationRefused as exc:
            refusal = refusal or exc
            continue
        subject = statement["subject"][0]["name"]
        predicate = statement["predicate"]
        print(
            f"{subject}: {predicate['event']} attested by {predicate.get('actor')} at "
            f"{predicate.get('issuedAt')}, signature good"
            + ("" if expected is None else ", configuration matches")
        )
        return EXIT_PASSED
    print(f"sherlock: refused: {refusal}")
    return EXIT_FAILED


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:  # noqa: C901
    args = _parser().parse_args(argv)
    # A cancelled CI job gets SIGTERM: handled as Ctrl-C, so what was done is uploaded before
    # the process ends (SIGKILL leaves no such chance; `--resume` covers that).
    signal.signal(signal.SIGTERM, _interrupt)
    if args.command == "verify" and args.attestation is not None:
        return _verify_offline(args)
    if args.command == "verify" and not args.agent:
        print("sherlock: verify needs --agent (or --attestation, offline)", file=sys.stderr)
        return EXIT_ERROR
    key = os.environ.get("SHERLOCK_API_KEY")
    if not args.url or not key:
        print("sherlock: set SHERLOCK_URL (or --url) and SHERLOCK_API_KEY", file=sys.stderr)
        return EXIT_ERROR
    options = flow.RunOptions(
        repetitions=getattr(args, "repetitions", 1),
        concurrency=getattr(args, "concurrency", 8),
        timeout=getattr(args, "timeout", 60.0),
        wait=getattr(args, "wait", 1800.0),
        policy=getattr(args, "policy", None),
        purpose=getattr(args, "purpose", "auto"),
        progress=True,
        on_run=_announce,
    )
    if options.concurrency < 1 or options.repetitions < 1 or options.timeout <= 0:
        print(
            "sherlock: --concurrency, --repetitions and --timeout must be positive", file=sys.stderr
        )
        return EXIT_ERROR
    try:
        with Client(args.url, key, timeout=args.http_timeout, retries=args.retries) as api:
            if args.command == "run":
                result = flow.run(
                    api,
                    agent=args.agent,
                    dataset=args.dataset,
                    task=args.task,
                    version=args.version,
                    resume=args.resume,
                    options=options,
                )
                return _report(result, args)
            if args.command == "evaluate":
                result = flow.evaluate_remote(
                    api,
                    agent=args.agent,
                    version=args.version,
                    dataset=args.dataset,
                    options=options,
                )
                return _report(result, args)
            if args.command == "gate":
                decided = flow.gate(
                    api, agent=args.agent, version=args.version, task=args.task, options=options
                )
                for result in decided.runs:
                    print_result(result, sys.stdout, rich=sys.stdout.isatty())
                for line in decided.lines:
                    print(line)
                if args.json:
                    import json

                    _write(args.json, json.dumps(decided.as_dict(), indent=2, default=str))
                return decided.exit_code
            if args.command == "attestation":
                code, lines = flow.fetch_attestation(
                    api, agent=args.agent, version=args.version, task=args.task, output=args.output
                )
            else:
                code, lines = flow.verify(
                    api, agent=args.agent, version=args.version, task=args.task
                )
            for line in lines:
                print(line)
            return code
    except flow.ConfigError as exc:
        print(f"sherlock: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ApiError as exc:
        print(f"sherlock: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(
            "sherlock: interrupted; what was done is uploaded (resume with --resume)",
            file=sys.stderr,
        )
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
