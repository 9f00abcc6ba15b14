"""Every figure of issue 35, each as a ratio against a baseline measured in the same run.

    python benchmarks/costs.py [--only hook,run,big,read,cli,gc,s3] [--rounds 100]
        [--big-mib 200] [--gc-artifacts 2000,20000] [--gc-signed] [--gc-before DIR] [--grep-big-mib 1024]

Baselines: the bare interpreter (``python -c pass``, same interpreter and environment),
the bare command (``sh -c 'echo hi'``), a spill of the same bytes (``s3spill spill``),
and the plain-Python reference jobs of :mod:`benchmarks.plain` (read: open + whole-file
SHA-256 + decode + split; GC: walk + one manifest per session + unlink).

Process figures run the commands interleaved round by round (A B A B ...), so a load
change on the shared machine hits both sides; each is the median wall-clock time, with
the median CPU time (user+sys from ``wait4``) beside it, which load inflates far less.
Request counts (section ``s3``) are what the boto3 client sent to a moto server, so they
do not depend on load at all. The last table lists each figure with its goal.

Which install the processes run (``--install``): by default a wheel of this checkout in a
scratch venv, as a user's ``pip install s3spill`` leaves it, whose dependencies are found
through a ``.pth`` line naming this interpreter's site-packages. Not the development venv's
editable install (``--install editable``): setuptools' finder, imported by its ``.pth`` in
every process, costs ~25 ms and imports pathlib, re, urllib.parse and more before ``main``
runs, so both sides of each ratio carried it and our side found modules already loaded that
the plain side never needs (measured so until wave 12: hook 1.06x became 1.72x, ``run``
1.3x became 2.1x, ``read`` 1.19x became 1.44x).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PY = sys.executable
#: The command as a harness runs it: the console script of the environment measured
#: (``python -m s3spill`` adds runpy's ~1 ms); :func:`use_interpreter` sets both.
_SCRIPT = Path(sys.executable).with_name("s3spill")
S3SPILL = [str(_SCRIPT)] if _SCRIPT.exists() else [PY, "-m", "s3spill"]
#: Run the processes of the wheel's venv without PYTHONPATH (its own s3spill), or this checkout's.
_CHECKOUT_ON_PATH = True


def wheel_venv(tmp: Path) -> Path:
    """A scratch venv holding a wheel of this checkout, its dependencies found through a ``.pth``
    line naming this interpreter's site-packages (whose ``.pth`` files, the editable install's
    among them, are not run: only a site directory's are); its interpreter."""
    import sysconfig

    wheels, venv = tmp / "wheel", tmp / "venv"
    # Without PYTHONPATH: on it, the checkout's own s3spill.egg-info (left by the wheel's build)
    # is "s3spill 0.1.0 already installed" to pip, which then installs nothing into the venv.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([PY, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT)],
                   check=True, stdout=subprocess.DEVNULL, env=env)
    subprocess.run([PY, "-m", "venv", str(venv)], check=True, env=env)  # its own pip: the script's shebang
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True, env=env).stdout.strip())
    (site / "zz-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    (wheel,) = wheels.glob("s3spill-*.whl")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)],
                   check=True, stdout=subprocess.DEVNULL, env=env)
    subprocess.run([python, "-m", "compileall", "-q", str(site / "s3spill")], check=True, env=env)
    found = subprocess.run([python, "-c", "import s3spill; print(s3spill.__file__)"], check=True,
                           capture_output=True, text=True, env=env, cwd=tmp).stdout.strip()
    if not (python.with_name("s3spill").exists() and Path(found).is_relative_to(site)):
        raise RuntimeError(f"the scratch venv does not run the wheel of {ROOT}: s3spill is {found}")
    return python


def use_interpreter(python: Path, *, checkout_on_path: bool) -> None:
    """Measure ``python``'s environment: its interpreter and console script."""
    global PY, S3SPILL, _CHECKOUT_ON_PATH
    PY, S3SPILL, _CHECKOUT_ON_PATH = str(python), [str(python.with_name("s3spill"))], checkout_on_path
SESSION = "costs-bench"
#: What the read section's grep looks for: every 50th line of its log is an ERROR line.
GREP_PATTERN = "ERROR"
#: The read section's page: 2,000 lines, as the plain read prints them. Without ``--max-chars``
#: our page stops at the model's default budget of 40,000 characters (~400 of those lines), and
#: the two sides would print different pages (measured so until wave 11: a 1:5 comparison).
PAGE_LINES = 2000
PAGE_MAX_CHARS = 1_000_000


def read_args(source_id: str, offset: str) -> list[str]:
    """``s3spill read`` of the benchmark's 2,000-line page (the plain read's page)."""
    return ["read", source_id, "--offset", offset, "--limit", str(PAGE_LINES),
            "--max-chars", str(PAGE_MAX_CHARS)]


SMALL_PAYLOAD = json.dumps({
    "session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
    "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
    "tool_response": {"stdout": "a.txt\nb.txt\n", "stderr": "", "interrupted": False},
    "tool_use_id": "toolu_01"}).encode()


@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)

    @property
    def wall_ms(self) -> float:
        return statistics.median(self.wall) * 1e3

    @property
    def cpu_ms(self) -> float:
        return statistics.median(self.cpu) * 1e3

    @property
    def rss_mib(self) -> float:
        return max(self.rss_kib) / 1024

    def show(self) -> dict[str, float]:
        return {"wall_ms_median": round(self.wall_ms, 2), "cpu_ms_median": round(self.cpu_ms, 2),
                "wall_ms_min": round(min(self.wall) * 1e3, 2), "peak_rss_mib": round(self.rss_mib, 1)}


@dataclass
class Cmd:
    argv: Sequence[str]
    stdin: Path | None = None
    ok: tuple[int, ...] = (0,)


def _once(cmd: Cmd, env: dict[str, str], into: Timing) -> None:
    stdin: IO[bytes] | int = subprocess.DEVNULL
    if cmd.stdin is not None:
        stdin = open(cmd.stdin, "rb")  # noqa: SIM115 - closed below
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd.argv), stdin=stdin, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env, cwd=ROOT)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        into.wall.append(time.perf_counter() - start)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if not isinstance(stdin, int):
            stdin.close()
    into.cpu.append(usage.ru_utime + usage.ru_stime)
    into.rss_kib.append(usage.ru_maxrss)
    if proc.returncode not in cmd.ok:
        raise RuntimeError(f"{list(cmd.argv)} exited {proc.returncode}: {err.decode(errors='replace')}")


def interleaved(cmds: dict[str, Cmd], rounds: int, env: dict[str, str]) -> dict[str, Timing]:
    """Each command ``rounds`` times, one of each per round (warm-up round not counted)."""
    out = {name: Timing() for name in cmds}
    for cmd in cmds.values():
        _once(cmd, env, Timing())
    for _ in range(rounds):
        for name, cmd in cmds.items():
            _once(cmd, env, out[name])
    return out


def bench_env(store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_") and k != "PYTHONPATH"}
    env.update(S3SPILL_STORE=str(store), S3SPILL_SESSION=SESSION)
    if _CHECKOUT_ON_PATH:
        env["PYTHONPATH"] = str(ROOT)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class Report:
    """Figures as rows: what, ours, baseline, ratio, goal; printed as one table at the end."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, float, float | None]] = []
        self.raw: dict[str, Any] = {}

    def ratio(self, what: str, ours: float, base: float, unit: str, goal: float | None,
              base_name: str) -> None:
        self.rows.append((what, f"{ours:.2f} {unit}", f"{base:.2f} {unit} ({base_name})",
                          ours / base if base else float("inf"), goal))

    def print(self) -> None:
        print(json.dumps(self.raw, indent=1, sort_keys=True))
        print()
        print("| figure | ours | baseline | ratio | goal | met |")
        print("|---|---|---|---|---|---|")
        for what, ours, base, ratio, goal in self.rows:
            met = "" if goal is None else ("yes" if ratio <= goal else "no")
            goal_s = "" if goal is None else f"<= {goal}x"
            print(f"| {what} | {ours} | {base} | {ratio:.2f}x | {goal_s} | {met} |")


def section_hook(report: Report, tmp: Path, env: dict[str, str], rounds: int) -> None:
    payload = tmp / "small-payload.json"
    payload.write_bytes(SMALL_PAYLOAD)
    t = interleaved({"pass": Cmd([PY, "-c", "pass"]),
                     "hook": Cmd([*S3SPILL, "hook", "claude-code"], payload)}, rounds, env)
    report.raw["hook_pass_through"] = {k: v.show() for k, v in t.items()} | {
        "payload_bytes": len(SMALL_PAYLOAD), "calls": rounds,
        "hook_total_seconds": round(sum(t["hook"].wall), 2)}
    report.ratio(f"hook pass-through ({len(SMALL_PAYLOAD)} B payload), wall median of {rounds}",
                 t["hook"].wall_ms, t["pass"].wall_ms, "ms", 2.5, "python -c pass")
    report.ratio("hook pass-through, CPU median", t["hook"].cpu_ms, t["pass"].cpu_ms, "ms", 2.5,
                 "python -c pass")


def section_run(report: Report, env: dict[str, str], rounds: int) -> None:
    bare = ["sh", "-c", "echo hi"]
    t = interleaved({"pass": Cmd([PY, "-c", "pass"]), "bare": Cmd(bare),
                     "run": Cmd([*S3SPILL, "run", "--", *bare])}, rounds, env)
    report.raw["run_small"] = {k: v.show() for k, v in t.items()} | {"calls": rounds}
    report.ratio(f"`s3spill run -- sh -c 'echo hi'` over the bare command, wall median of {rounds}",
                 t["run"].wall_ms - t["bare"].wall_ms, t["pass"].wall_ms, "ms", 1.5, "python -c pass")
    report.ratio("same, CPU median", t["run"].cpu_ms - t["bare"].cpu_ms, t["pass"].cpu_ms, "ms", 1.5,
                 "python -c pass")


def _big_payload(tmp: Path, mib: int) -> tuple[Path, Path]:
    """A Claude Code Bash PostToolUse payload whose stdout is ``mib`` MiB of log, and that stdout."""
    from benchmarks.read_bench import log_lines

    text_path, payload_path = tmp / "big.log", tmp / "big-payload.json"
    head = json.dumps({"session_id": SESSION, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "make"}, "tool_use_id": "toolu_02"})[:-1]
    with open(text_path, "wb") as text, open(payload_path, "wb") as out:
        out.write(head.encode() + b', "tool_response": {"stdout": "')
        for piece in log_lines(mib << 20):
            text.write(piece)
            out.write(json.dumps(piece.decode())[1:-1].encode())
        out.write(b'", "stderr": "", "interrupted": false}}')
    return payload_path, text_path


def section_big(report: Report, tmp: Path, env: dict[str, str], mib: int, rounds: int) -> None:
    payload, text = _big_payload(tmp, mib)
    just_over = tmp / "over-floor-payload.json"
    small_text = tmp / "over-floor.log"
    from benchmarks.read_bench import log_lines

    small_text.write_bytes(b"".join(log_lines(40_000)))
    just_over.write_bytes(json.dumps({"session_id": SESSION, "hook_event_name": "PostToolUse",
                                      "tool_name": "Bash", "tool_response": {
                                          "stdout": small_text.read_text(), "stderr": ""}}).encode())
    hook = [*S3SPILL, "hook", "claude-code"]
    spill = [*S3SPILL, "spill", str(text)]
    t = interleaved({"hook_big": Cmd(hook, payload), "spill_big": Cmd(spill),
                     "hook_40k": Cmd(hook, just_over)}, rounds, env)
    report.raw["hook_big"] = {k: v.show() for k, v in t.items()} | {
        "payload_bytes": payload.stat().st_size, "text_bytes": text.stat().st_size}
    report.ratio(f"hook on a {payload.stat().st_size / 1e6:.0f} MB Bash payload, wall median of {rounds}",
                 t["hook_big"].wall_ms, t["spill_big"].wall_ms, "ms", 1.2,
                 "`s3spill spill` of the same bytes")
    report.ratio("same, CPU median", t["hook_big"].cpu_ms, t["spill_big"].cpu_ms, "ms", 1.2,
                 "`s3spill spill` of the same bytes")
    over = t["hook_big"].rss_mib - t["hook_40k"].rss_mib
    report.rows.append(("hook on that payload, peak RSS over the same hook on a 40 KB payload "
                        "(ratio: to the 100 MiB bound)",
                        f"{over:.1f} MiB", f"{t['hook_40k'].rss_mib:.1f} MiB (hook, 40 KB payload)",
                        over / 100, 1.0))


def section_read(report: Report, tmp: Path, env: dict[str, str], rounds: int) -> None:
    from benchmarks.read_bench import log_lines
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.store.local import LocalStore

    store = Path(env["S3SPILL_STORE"])
    data = b"".join(log_lines(1 << 20, match_every=50))
    plain_file = tmp / "plain-1mib.log"
    plain_file.write_bytes(data)
    ref = ArtifactStore(LocalStore(store), session_id=SESSION).write(SESSION, [data], "bench")
    mid = str(ref.line_count // 2)
    plain = str(ROOT / "benchmarks" / "plain.py")
    matching = sum(GREP_PATTERN.encode() in line for line in data.splitlines())
    shown = _grep_shown(plain, plain_file, ref.source_id, env)
    if matching < 20 or shown != (20, 20):
        raise RuntimeError(f"the grep benchmark must show 20 matching lines on both sides: {matching} match,"
                           f" shown (plain, ours) {shown}")
    page = _page_shown(plain, plain_file, ref.source_id, mid, ref.sha256, env)
    if page != (PAGE_LINES, PAGE_LINES):
        raise RuntimeError(f"the read benchmark must show {PAGE_LINES} lines on both sides: (plain, ours)"
                           f" {page}")
    first_page = ArtifactStore(LocalStore(store), session_id=SESSION).read_page(
        ref.source_id, offset=int(mid), limit=PAGE_LINES, max_chars=PAGE_MAX_CHARS).render("cli")
    if sum(1 for line in first_page.splitlines() if not line.startswith("[")) != PAGE_LINES:
        raise RuntimeError(f"the first-call benchmark's page must hold {PAGE_LINES} lines")
    t = interleaved({
        "pass": Cmd([PY, "-c", "pass"]),
        "plain_read": Cmd([PY, plain, "read", str(plain_file), mid, str(PAGE_LINES), ref.sha256]),
        "read": Cmd([*S3SPILL, *read_args(ref.source_id, mid)]),
        "read_show_secrets": Cmd([*S3SPILL, *read_args(ref.source_id, mid), "--show-secrets"]),
        "read_budget": Cmd([*S3SPILL, "read", ref.source_id, "--offset", mid, "--limit", str(PAGE_LINES)]),
        "plain_grep": Cmd([PY, plain, "grep", str(plain_file), GREP_PATTERN, "20"]),
        "grep": Cmd([*S3SPILL, "grep", ref.source_id, GREP_PATTERN, "--max-matches", "20"]),
    }, rounds, env)
    report.raw["read_process"] = {k: v.show() for k, v in t.items()}
    report.ratio("`s3spill read`, 2,000 lines of a 1 MiB artifact, whole process (wall)", t["read"].wall_ms,
                 t["plain_read"].wall_ms, "ms", 1.0, "plain read process")
    report.ratio("same, CPU", t["read"].cpu_ms, t["plain_read"].cpu_ms, "ms", 1.0, "plain read process")
    report.ratio("`s3spill read --show-secrets` (no masking; the plain side masks nothing), CPU",
                 t["read_show_secrets"].cpu_ms, t["plain_read"].cpu_ms, "ms", 1.0, "plain read process")
    report.ratio("`s3spill read` with the model's default budget (40,000 characters, ~400 of the lines;"
                 " not the issue's page), CPU", t["read_budget"].cpu_ms, t["plain_read"].cpu_ms, "ms", 1.0,
                 "plain read process (2,000 lines)")
    report.ratio(f"`s3spill grep {GREP_PATTERN}`, 20 of {matching:,} matching lines shown, whole process"
                 " (wall)", t["grep"].wall_ms, t["plain_grep"].wall_ms, "ms", 1.0, "plain grep process")
    report.ratio("same, CPU", t["grep"].cpu_ms, t["plain_grep"].cpu_ms, "ms", 1.0, "plain grep process")
    first = _first_calls(store, ref.source_id, int(mid), plain_file, ref.sha256, env, max(5, rounds // 2))
    report.raw["read_first_call"] = first
    report.ratio("first page call in a fresh process, masked as the agent tools read (`view=mask_view`;"
                 " wall, imports of the caller done)", first["masked_ms"], first["plain_ms"], "ms", 1.0,
                 "plain read_page, first call")
    report.ratio("first page call in a fresh process, no view (the library's default; wall)",
                 first["ours_ms"], first["plain_ms"], "ms", 1.0, "plain read_page, first call")


def _page_shown(plain: str, plain_file: Path, source_id: str, mid: str, sha: str,
                env: dict[str, str]) -> tuple[int, int]:
    """How many of the page's lines each read prints (both must print all 2,000), and that our
    page's lines are the plain read's."""
    out = subprocess.run([PY, plain, "read", str(plain_file), mid, str(PAGE_LINES), sha], env=env, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    ours = subprocess.run([*S3SPILL, *read_args(source_id, mid)], env=env, check=True,
                          capture_output=True, text=True).stdout.splitlines()
    rows = [line for line in ours if not line.startswith("[")]
    if [row.split("\t", 1)[-1] for row in rows] != out[:len(rows)]:
        raise RuntimeError("the read benchmark's two sides print different lines")
    return len(out), len(rows)


def _grep_shown(plain: str, plain_file: Path, source_id: str, env: dict[str, str]) -> tuple[int, int]:
    """How many matching lines each grep of the benchmark prints (both must print 20)."""
    out = subprocess.run([PY, plain, "grep", str(plain_file), GREP_PATTERN, "20"], env=env, check=True,
                         capture_output=True, text=True).stdout
    ours = subprocess.run([*S3SPILL, "grep", source_id, GREP_PATTERN, "--max-matches", "20"], env=env,
                          check=True, capture_output=True, text=True).stdout
    return (len(out.splitlines()), sum(1 for line in ours.splitlines() if line[6:7] == ":"))


def section_cli(report: Report, env: dict[str, str], rounds: int) -> None:
    """What every other sub-command's process costs (the test suite starts hundreds): the CLI's
    imports, as ratios to the bare interpreter; no goal (issue 35's list names none)."""
    store = Path(env["S3SPILL_STORE"])
    store.mkdir(parents=True, exist_ok=True)
    cmds = {"pass": Cmd([PY, "-c", "pass"]), "help": Cmd([*S3SPILL, "--help"]),
            "version": Cmd([*S3SPILL, "--version"]), "ls": Cmd([*S3SPILL, "ls"]),
            "gc_plan_help": Cmd([*S3SPILL, "gc", "plan", "--help"])}
    t = interleaved(cmds, rounds, env)
    report.raw["cli_process"] = {k: v.show() for k, v in t.items()}
    for name, what in (("help", "--help"), ("version", "--version"), ("ls", "ls"),
                       ("gc_plan_help", "gc plan --help")):
        report.ratio(f"`s3spill {what}`, whole process, CPU median of {rounds}", t[name].cpu_ms,
                     t["pass"].cpu_ms, "ms", None, "python -c pass")


FIRST_CALL = """
import json, sys, time
sys.path.append({root!r})  # benchmarks.plain; s3spill as the environment measured has it
if {ours!r}:
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.store.local import LocalStore
    from pathlib import Path
    view = None
    if {masked!r}:
        from s3spill.context.secrets.masking import mask_view as view
    def call():
        return ArtifactStore(LocalStore(Path({store!r})), session_id={session!r}, view=view).read_page(
            {source_id!r}, offset={mid}, limit={lines}, max_chars={max_chars}).render("cli")
else:
    from benchmarks.plain import read_page
    def call():
        return read_page({plain!r}, {mid}, {lines}, {sha!r})
t = time.perf_counter(); call(); print(json.dumps(time.perf_counter() - t))
"""


def _first_calls(store: Path, source_id: str, mid: int, plain: Path, sha: str, env: dict[str, str],
                 runs: int) -> dict[str, float]:
    times: dict[str, list[float]] = {"ours": [], "masked": [], "plain": []}
    for _ in range(runs):
        for side in times:
            code = FIRST_CALL.format(root=str(ROOT), ours=side != "plain", masked=side == "masked",
                                     store=str(store), session=SESSION, source_id=source_id, mid=mid,
                                     plain=str(plain), sha=sha, lines=PAGE_LINES, max_chars=PAGE_MAX_CHARS)
            out = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True, check=True)
            times[side].append(float(out.stdout))
    return {f"{side}_ms": round(statistics.median(values) * 1e3, 2) for side, values in times.items()} | {
        "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="hook,run,big,read,cli,gc,s3")
    parser.add_argument("--rounds", type=int, default=100, help="calls of each small command")
    parser.add_argument("--big-mib", type=int, default=200, help="the huge hook payload's stdout (MiB)")
    parser.add_argument("--big-rounds", type=int, default=3)
    parser.add_argument("--read-rounds", type=int, default=21)
    parser.add_argument("--gc-artifacts", default="2000,20000")
    parser.add_argument("--gc-rounds", type=int, default=3)
    parser.add_argument("--gc-signed", action="store_true",
                        help="also run GC with a plan key (apply skips re-reading commit records)")
    parser.add_argument("--gc-before", type=Path, default=None,
                        help="another checkout whose GC runs interleaved on the same population")
    parser.add_argument("--grep-big-mib", type=int, default=1024, help="the large artifact of the S3 grep")
    parser.add_argument("--install", choices=("wheel", "editable"), default="wheel",
                        help="the processes run a wheel of this checkout in a scratch venv (as a user's"
                             " install), or this interpreter's environment (the editable development"
                             " install, with PYTHONPATH on this checkout)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    report = Report()
    with tempfile.TemporaryDirectory(prefix="s3spill-costs-") as tmp_s:
        tmp = Path(tmp_s)
        if args.install == "wheel" and only & {"hook", "run", "big", "read", "cli"}:
            use_interpreter(wheel_venv(tmp), checkout_on_path=False)
        env = bench_env(tmp / "store")
        report.raw["interpreter"] = sys.version.split()[0]
        report.raw["install"] = args.install
        if "hook" in only:
            section_hook(report, tmp, env, args.rounds)
        if "run" in only:
            section_run(report, env, args.rounds)
        if "big" in only:
            section_big(report, tmp, env, args.big_mib, args.big_rounds)
        if "read" in only:
            section_read(report, tmp, env, args.read_rounds)
        if "cli" in only:
            section_cli(report, env, args.read_rounds)
        if "gc" in only:
            from benchmarks.costs_gc import section_gc, section_gc_linearity

            for n in (int(x) for x in args.gc_artifacts.split(",") if x):
                section_gc(report, tmp / f"gc-{n}", n, args.gc_rounds, signed=args.gc_signed,
                           before=args.gc_before)
            section_gc_linearity(report)
        if "s3" in only:
            from benchmarks.costs_s3 import section_s3

            section_s3(report, args.grep_big_mib)
    report.print()


if __name__ == "__main__":
    main()
