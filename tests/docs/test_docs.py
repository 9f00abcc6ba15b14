"""The README and docs/ agree with the code: their commands run or parse, their links resolve."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from s3spill.cli import build_parser
from s3spill.cli.exitcodes import ExitCode
from s3spill.testing import child_env

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
#: A line in a shell block marked like this needs a service the suite does not start
#: (AWS, a Kubernetes cluster, Docker); its flags are still checked.
EXTERNAL = "# needs:"


def _block(path: Path, marker: str, lang: str) -> str:
    text = path.read_text(encoding="utf-8")
    assert text.count(marker) == 1, f"{path.name}: {marker} must mark exactly one block"
    m = re.search(re.escape(marker) + rf"\n```{lang}\n(.*?)^```", text, re.M | re.S)
    assert m, f"{path.name}: no ```{lang} block right after {marker}"
    return m.group(1)


def _s3spill_shim(tmp_path: Path) -> Path:
    """A bin/ whose `s3spill` runs this checkout's package with this interpreter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "s3spill"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m s3spill "$@"\n')
    shim.chmod(0o755)
    return bin_dir


def test_readme_quick_start_runs_as_written(tmp_path: Path) -> None:
    """The README's quick start runs end to end: run, spill, read, grep, publish, GC plan and apply."""
    block = _block(ROOT / "README.md", "<!-- quickstart -->", "sh")
    first, rest = block.split("\n", 1)
    assert first.startswith('export PATH="$PWD/.venv/bin:$PATH"')
    env = child_env({"PATH": f"{_s3spill_shim(tmp_path)}{os.pathsep}{os.environ['PATH']}",
                     "HOME": str(tmp_path), "TMPDIR": str(tmp_path)})
    for name in ("S3SPILL_STORE", "S3SPILL_SESSION", "CLAUDE_SESSION_ID", "CLAUDE_CODE_SESSION_ID"):
        env.pop(name, None)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", rest], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "Full output of bash (exit code 0): 1988895 bytes, 300000 lines" in out
    assert "150000\t150000\n150001\t150001\n150002\t150002\n" in out
    assert "[10 matching lines;" in out and "committed tx-" in out
    # deleted: the unreferenced artifact and the usage objects `run`, `read` and `grep` wrote
    # (a CLI read or grep records what it printed since 1e3e484)
    assert '"retained_referenced": 1' in out and '"deleted": 4' in out


#: What may stand right before a shell block that calls s3spill.
MARKERS = ("<!-- quickstart -->", "<!-- doc-test -->", "<!-- synopsis -->", "<!-- needs: ")


def _shell_blocks() -> Iterator[tuple[Path, str, str]]:
    """(file, the line before the block, the block) for each shell block that calls s3spill."""
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"^```(?:sh|bash|console|shell)\n(.*?)^```", text, re.M | re.S):
            if "s3spill" in m.group(1):
                yield path, text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1], m.group(1)


def test_every_documented_command_runs_or_says_why_not() -> None:
    """Each shell block with s3spill in it is run by a test, or marked a synopsis or as needing a service."""
    unmarked = [f"{path.name}: {body.splitlines()[0]}" for path, before, body in _shell_blocks()
                if not before.startswith(MARKERS)]
    assert unmarked == []


@pytest.mark.parametrize("path", [p for p in DOCS if "<!-- doc-test -->" in p.read_text(encoding="utf-8")],
                         ids=lambda p: p.name)
def test_doc_test_blocks_run_as_written(path: Path, tmp_path: Path) -> None:
    """Every block marked doc-test runs to exit 0 against a fresh local store, as written."""
    blocks = [body for p, before, body in _shell_blocks() if p == path and before == "<!-- doc-test -->"]
    assert blocks
    env = child_env({"PATH": f"{_s3spill_shim(tmp_path)}{os.pathsep}{os.environ['PATH']}",
                     "HOME": str(tmp_path), "S3SPILL_STORE": (tmp_path / "store").as_uri()})
    for name in ("S3SPILL_SESSION", "CLAUDE_SESSION_ID", "CLAUDE_CODE_SESSION_ID"):
        env.pop(name, None)
    for body in blocks:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", body], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, f"{path.name}:\n{body}\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr and not re.search(r"^s3spill: ", proc.stderr, re.M)


def test_readme_library_hook_runs(tmp_path: Path) -> None:
    """The README's library-hook snippet stores an oversized output and hands back a pointer."""
    code = _block(ROOT / "README.md", "<!-- library-hook -->", "python")
    assert 'open_store("s3://bucket/agents")' in code
    code = code.replace('open_store("s3://bucket/agents")', f"open_store({(tmp_path / 's').as_uri()!r})")
    scope: dict[str, object] = {"big_text": "".join(f"line {i}\n" for i in range(100_000)), "messages": []}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the documented snippet, as written
    (message,) = scope["messages"]  # type: ignore[misc]
    assert "source_id=" in message["content"] and len(message["content"]) < 40_000


def _links(path: Path) -> Iterator[tuple[str, str]]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if not re.match(r"[a-z]+:", target):
            file, _, anchor = target.partition("#")
            yield file, anchor


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(path: Path) -> None:
    """Every relative link in the README and docs/ names a file that exists (and a heading in it)."""
    for file, anchor in _links(path):
        target = (path.parent / file).resolve() if file else path
        assert target.exists(), f"{path.name}: broken link {file}"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"{path.name}: {file}#{anchor} names no heading"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """Each option of ``parser`` -> whether it takes a value."""
    return {opt: action.nargs != 0 for action in parser._actions for opt in action.option_strings}


def _documented_calls() -> Iterator[tuple[str, list[str]]]:
    """Each `s3spill ...` call in a shell block of the README or docs/, as argv."""
    for path in DOCS:
        for lang, body in FENCE.findall(path.read_text(encoding="utf-8")):
            if lang not in ("sh", "bash", "console", "shell"):
                continue
            for line in body.splitlines():
                # s3spill in command position: a line's start, after $( or a pipe/&&/;.
                for m in re.finditer(r"(?:^\s*(?:\$ )?|\$\(|[|;&]\s*)(?:\S*/)?s3spill\s+([^|;&)>#]*)",
                                     line):
                    try:
                        argv = shlex.split(m.group(1))
                    except ValueError:
                        argv = m.group(1).split()
                    # Synopsis brackets ([--txid ID], FILE|store) are notation, not words.
                    yield f"{path.name}: {line.strip()}", [w.strip("[]") for w in argv]


def test_documented_commands_and_flags_exist() -> None:
    """Every documented `s3spill` call names real sub-commands and real flags of them."""
    root = build_parser({})
    calls = list(_documented_calls())
    assert len(calls) > 25, "the docs show the CLI in many places; the scan found too few"
    problems = []
    for where, argv in calls:
        parser, known = root, _options(root)
        words = iter(argv)
        for word in words:
            if word == "--":
                break
            if word.startswith("-"):
                flag = word.split("=", 1)[0]
                if flag.startswith("--") and flag not in known:
                    problems.append(f"{where}: unknown flag {flag}")
                elif known.get(flag) and "=" not in word:
                    next(words, None)  # the flag's value
                continue
            sub = _subparsers(parser)
            if sub:
                if word not in sub and not word.startswith(("$", "<", "[", "{")):
                    problems.append(f"{where}: unknown command {word!r}")
                    break
                if word in sub:
                    parser = sub[word]
                    known = {**known, **_options(parser)}
    assert problems == []


def test_documented_exit_codes_exist() -> None:
    """Every "exit N" in the README and docs/ is a code of the one exit-code table."""
    codes = {int(code) for code in ExitCode}
    said = {(path.name, int(n)) for path in DOCS
            for n in re.findall(r"\bexit(?:s| code| status)? \**(\d+)\b", path.read_text(encoding="utf-8"))}
    assert len(said) > 5
    assert sorted(item for item in said if item[1] not in codes) == []


def test_readme_says_mcp_needs_its_extra() -> None:
    """The README's MCP section says `s3spill mcp` needs `pip install 's3spill[mcp]'`, an extra
    pyproject defines (a fresh install has no MCP SDK)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("**2. MCP**"):readme.index("**3. ")]
    assert "pip install 's3spill[mcp]'" in section and "`s3spill mcp` needs" in section
    assert re.search(r"^mcp = \[", (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
