"""The reference agent loop and docs/harness-api.md's harness example run as written, and act on pointers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from s3spill.demo.scripted_agent import ERROR_AT, LONG_LINE_AT, print_build_log, run_agent_example
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.store import ObjectStore
from s3spill.testing import child_env

ROOT = Path(__file__).resolve().parents[2]
README_MARKER = "<!-- harness-api-example -->"


def _long_line() -> str:
    import io

    buf = io.StringIO()
    print_build_log(buf)
    return buf.getvalue().splitlines()[LONG_LINE_AT - 1]


def test_loop_follows_the_pointer_against_s3(server_store: ObjectStore) -> None:
    """Against S3 (moto over HTTP): a 2 MB output reaches the model as a pointer; the model
    pages to the middle, reassembles a long line from the footers, finds the error by grep,
    and publishes a memory reference that is COMMITTED in the journal and held by the owner."""
    session = "agent-example"
    run = run_agent_example(server_store, session)
    actions = [s.action.split("(")[0] for s in run.steps]
    assert actions == ["bash", "read_artifact", "read_artifact", "grep_artifact", "remember", "answer"]
    bash, first_page, second_page = run.steps[0], run.steps[1], run.steps[2]
    assert run.raw_output_bytes > 2_000_000 and bash.result_chars < 35_000
    assert "char_offset=" in second_page.action
    assert first_page.result_chars <= 12_000 and second_page.result_chars <= 12_000
    assert all(s.context_after >= s.context_before for s in run.steps)
    assert run.steps[-1].context_after < 60_000

    pages = [m["content"] for m in run.messages if m["role"] == "tool"][1:3]
    pieces = [re.search(rf"^ *{LONG_LINE_AT}\t(.*)$", p, re.MULTILINE) for p in pages]
    assert all(pieces) and "".join(p.group(1) for p in pieces if p) == _long_line()
    assert f"line {ERROR_AT}: [{ERROR_AT}] ERROR src/net/tls.c:88" in run.answer

    (txid,) = run.published
    (source_id,) = run.artifacts
    reference = S3ReferenceOwner(server_store, session).get_reference(txid)
    assert reference is not None and reference.source_id == source_id
    assert reference.summary.startswith(f"build fails at line {ERROR_AT}")
    tx = LeaseJournal(server_store, session).transaction(txid)
    assert tx is not None and tx.state == "COMMITTED"


def test_examples_agent_loop_script_runs(tmp_path: Path) -> None:
    """`python examples/agent_loop.py` runs to the answer on a temporary local store."""
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "agent_loop.py")], cwd=tmp_path,
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "1. bash(" in out and "5. remember(" in out and "answer: The build fails at line" in out
    assert re.search(r"context 79 -> \d{2},\d{3} chars", out)


def test_readme_harness_example_runs_as_written(tmp_path: Path) -> None:
    """docs/harness-api.md's harness example (the block after its marker) runs unchanged and publishes."""
    readme = (ROOT / "docs" / "harness-api.md").read_text()
    assert readme.count(README_MARKER) == 1
    m = re.search(re.escape(README_MARKER) + r"\n```python\n(.*?)\n```\n", readme, re.DOTALL)
    assert m is not None
    script = tmp_path / "harness_example.py"
    script.write_text(m.group(1))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "The build fails at line 21337" in proc.stdout
    assert "memory reference COMMITTED" in proc.stdout
