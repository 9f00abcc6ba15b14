"""The read path: chunks fetched once across page re-fits; a CLI read loads only what it needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.context.policy import SpillPolicy, ToolPolicy
from s3spill.store import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import child_env
from tests.artifacts.inspect_store import CountingStore
from tests.conftest import TEST_CONFIG

CONFIG = TEST_CONFIG.model_copy(update={"index_chunk_size": 8192})
DATA = b"".join(b"%06d a line of ordinary test output, long enough to matter\n" % i
                for i in range(20_000))


def test_refitting_a_page_fetches_each_chunk_once(store: ObjectStore) -> None:
    """A page shrunk several times to fit a tight policy fetches every chunk it needs once."""
    counting = CountingStore(store)
    sid = ArtifactStore(counting, CONFIG, session_id="S").write("S", DATA, "bash").source_id
    policy = SpillPolicy(read_tool="read_artifact", grep_tool="grep_artifact",
                         default=ToolPolicy(threshold=3_000, threshold_unit="bytes"))
    tools = AgentTools(counting, "S", policy=policy,
                       artifacts=ArtifactStore(counting, CONFIG, session_id="S"))
    counting.reset()
    text = tools.read_artifact(sid, offset=10_000, limit=2_000)
    assert len(text.encode()) <= 3_000
    ranged = [r for op, _, r in counting.requests if op == "get" and r is not None]
    assert ranged and len(ranged) == len(set(ranged))


def test_a_cli_read_imports_neither_boto3_nor_structlog_nor_gc(tmp_path: Path) -> None:
    """`s3spill read` of a local artifact loads only the artifact layer (fast start-up)."""
    store = LocalStore(tmp_path / "store")
    sid = ArtifactStore(store, session_id="S").write("S", DATA, "bash").source_id
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['s3spill', '--store', {str(tmp_path / 'store')!r}, '--session', 'S',"
        f" 'read', {sid!r}, '--offset', '5000', '--limit', '2000']\n"
        "try:\n    runpy.run_module('s3spill', run_name='__main__')\n"
        "except SystemExit as e:\n    code = e.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore',"
        " 'structlog') or m.startswith(('s3spill.gc', 's3spill.agent',"
        " 's3spill.leases', 's3spill.spill')))\n"
        "print('\\n' + __import__('json').dumps({'code': code, 'heavy': heavy}))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True,
                         env=child_env(), timeout=120).stdout.decode()
    assert "  5001\t005000 a line" in out
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {"code": 0, "heavy": []}
