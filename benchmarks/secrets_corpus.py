"""Precision and recall of secret masking on output captured from real tools on this machine.

Captures (once, into ``--dir``) what agents' tools really print: ``git log -p`` of this
repository and of a public one (psf/requests, a mirror fetched for reading), ``pip install
-v`` of a few packages, ``npm ci --loglevel verbose`` of tests/mcp_servers, this project's
``pytest -v`` on a few test files, and two generated kinds: Kubernetes-style YAML
(Deployments, ConfigMaps, Secrets with base64 data of non-secret words) and env dumps
(no variable of this machine: made-up names and values). Then:

- false positives: every span masked in the clean corpus, per 10 MB, by kind, with the first
  examples (a masked span there is a false positive unless the text really is a credential,
  e.g. a test fixture; the examples say which);
- recall: fake secrets of each kind planted at random lines (with a random assignment or
  context around them) and counted as found when no 4-character piece of them survives.

    python benchmarks/secrets_corpus.py --dir /tmp/corpus [--requests-git DIR] [--plant 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from s3spill.context.secrets import default_detector  # noqa: E402
from s3spill.context.secrets.masking import LineMasker  # noqa: E402

MB = 1_000_000


def _run(argv: list[str], out: Path, cwd: Path | None = None, limit: int = 40 * MB,
         env: dict[str, str] | None = None) -> None:
    if out.exists():
        return
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=900, env=env)
    out.write_bytes((proc.stdout + proc.stderr)[:limit])


def capture(d: Path, requests_git: str | None) -> None:
    d.mkdir(parents=True, exist_ok=True)
    _run(["git", "-C", str(ROOT), "log", "-p", "--no-color"], d / "git_log_p_s3spill.txt")
    if requests_git:
        _run(["git", f"--git-dir={requests_git}", "log", "-p", "--no-color"], d / "git_log_p_requests.txt")
    with tempfile.TemporaryDirectory() as tmp:
        _run([sys.executable, "-m", "pip", "install", "-v", "--no-cache-dir", "--target", tmp, "requests",
              "rich", "pyyaml", "attrs"], d / "pip_install_v.txt")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("package.json", "package-lock.json"):
            shutil.copy(ROOT / "tests" / "mcp_servers" / name, tmp)
        _run(["npm", "ci", "--loglevel", "verbose", "--ignore-scripts", "--no-audit", "--no-fund"],
             d / "npm_ci.txt", cwd=Path(tmp))
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")} | {"PYTHONPATH": str(ROOT)}
    _run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests/context/test_pointer.py",
          "tests/test_keys.py", "tests/context/test_retention.py", "tests/artifacts/test_read.py"],
         d / "pytest_v.txt", cwd=ROOT, env=env)
    rng = random.Random(7)
    if not (d / "k8s.yaml").exists():
        (d / "k8s.yaml").write_text(_k8s(rng, 3000))
    if not (d / "env_dumps.txt").exists():
        (d / "env_dumps.txt").write_text(_env(rng, 3000))


def _word(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choices(string.ascii_lowercase, k=n))


def _k8s(rng: random.Random, n: int) -> str:
    import base64

    docs = []
    for i in range(n):
        name = f"{_word(rng, 6)}-{i}"
        kind = rng.choice(["Deployment", "ConfigMap", "Secret", "Service"])
        doc = [f"apiVersion: {'apps/v1' if kind == 'Deployment' else 'v1'}", f"kind: {kind}", "metadata:",
               f"  name: {name}", "  namespace: default", "  labels:", f"    app: {name}",
               f"    pod-template-hash: {rng.getrandbits(40):x}",
               f"  uid: {rng.getrandbits(128):032x}", f"  resourceVersion: \"{rng.randrange(10**8)}\""]
        if kind == "Secret":
            doc += ["type: Opaque", "data:"] + [
                f"  {_word(rng, 5)}: {base64.b64encode(_word(rng, rng.randint(4, 30)).encode()).decode()}"
                for _ in range(3)]
        elif kind == "ConfigMap":
            doc += ["data:", f"  LOG_LEVEL: {rng.choice(['debug', 'info'])}",
                    f"  UPSTREAM_URL: https://{_word(rng)}.svc.cluster.local:8443/api",
                    f"  FEATURE_FLAGS: {','.join(_word(rng, 5) for _ in range(4))}"]
        elif kind == "Deployment":
            doc += ["spec:", "  replicas: 3", "  template:", "    spec:", "      containers:",
                    f"      - name: {name}",
                    f"        image: registry.example.com/{_word(rng)}@sha256:{rng.getrandbits(256):064x}",
                    "        env:", "        - name: PASSWORD", "          valueFrom:",
                    "            secretKeyRef:",
                    f"              name: {name}-secret", "              key: password"]
        else:
            ip = f"10.{rng.randrange(255)}.{rng.randrange(255)}.{rng.randrange(255)}"
            doc += ["spec:", f"  clusterIP: {ip}",
                    "  ports:", f"  - port: {rng.randrange(1, 65535)}"]
        docs.append("\n".join(doc))
    return "\n---\n".join(docs) + "\n"


def _env(rng: random.Random, n: int) -> str:
    names = ["HOME", "PATH", "LANG", "HOSTNAME", "CI_JOB_ID", "CI_COMMIT_SHA", "GIT_COMMIT", "BUILD_ID",
             "NODE_VERSION", "PYTHONHASHSEED", "KUBERNETES_SERVICE_HOST", "RUNNER_TEMP", "GITHUB_SHA",
             "GITHUB_RUN_ID", "JAVA_HOME", "DOCKER_IMAGE_DIGEST"]
    lines = []
    for _ in range(n):
        for name in rng.sample(names, 10):
            value = {"CI_COMMIT_SHA": f"{rng.getrandbits(160):040x}",
                     "GIT_COMMIT": f"{rng.getrandbits(160):040x}",
                     "GITHUB_SHA": f"{rng.getrandbits(160):040x}",
                     "DOCKER_IMAGE_DIGEST": f"sha256:{rng.getrandbits(256):064x}",
                     "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": f"/home/{_word(rng, 5)}",
                     "KUBERNETES_SERVICE_HOST": f"10.0.{rng.randrange(255)}.1",
                     }.get(name, str(rng.randrange(10**9)))
            lines.append(f"{name}={value}")
    return "\n".join(lines) + "\n"


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


ALNUM = string.ascii_letters + string.digits


def fake(kind: str, rng: random.Random) -> tuple[str, str]:
    """(line holding a fake secret of ``kind``, the secret)."""
    if kind == "aws-key":
        s = "AKIA" + _rand(rng, string.ascii_uppercase + string.digits, 16)
        return f"export AWS_ACCESS_KEY_ID={s}", s
    if kind == "aws-secret":
        s = _rand(rng, ALNUM + "/+", 40)
        return f"aws_secret_access_key = {s}", s
    if kind == "github-token":
        s = "ghp_" + _rand(rng, ALNUM, 36)
        return f"remote: using token {s}", s
    if kind == "url-password":
        s = _rand(rng, ALNUM, rng.randint(10, 24))
        return f"fatal: unable to access 'https://ci-bot:{s}@git.example.com/team/repo.git/'", s
    if kind == "high-entropy":
        s = _rand(rng, ALNUM + "/+", rng.randint(32, 64))
        return f"{rng.choice(['SESSION_TOKEN', 'API_SECRET', 'DEPLOY_TOKEN', 'client_secret'])}={s}", s
    if kind == "slack-token":
        s = f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-{_rand(rng, ALNUM, 24)}"
        return f"SLACK_BOT_TOKEN={s}", s
    if kind == "private-key":
        body = "\n".join(_rand(rng, ALNUM + "+/", 64) for _ in range(rng.randint(8, 25)))
        return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----", body
    raise ValueError(kind)


KINDS = ["aws-key", "aws-secret", "github-token", "url-password", "high-entropy", "slack-token",
         "private-key"]


def mask(data: bytes) -> tuple[bytes, list[tuple[int, int, str]]]:
    masker = LineMasker(default_detector())
    out = masker.process(data)
    return out, masker.spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="/tmp/s3spill-secrets-corpus")
    parser.add_argument("--requests-git", default=None, help="git dir of a public repository to log")
    parser.add_argument("--plant", type=int, default=300, help="fake secrets planted per kind")
    args = parser.parse_args()
    d = Path(args.dir)
    capture(d, args.requests_git)
    default_detector()
    total, fps, examples = 0, Counter[str](), []
    report: dict[str, object] = {"files": {}}
    for path in sorted(d.iterdir()):
        data = path.read_bytes()
        started = time.perf_counter()
        _, spans = mask(data)
        took = time.perf_counter() - started
        total += len(data)
        kinds = Counter(k for _, _, k in spans)
        fps.update(kinds)
        report["files"][path.name] = {"bytes": len(data), "masked": dict(kinds), "seconds": round(took, 2)}  # type: ignore[index]
        for s, e, k in spans[:3]:
            line_start = data.rfind(b"\n", 0, s) + 1
            shown = data[line_start:min(len(data), e + 40)][:160].decode("utf-8", "replace")
            examples.append((path.name, k, shown))
    report["bytes"] = total
    report["false_positives"] = dict(fps)
    report["fp_per_10MB"] = round(sum(fps.values()) / (total / (10 * MB)), 2)
    # Recall: plant fake secrets at random line starts of the whole corpus.
    rng = random.Random(31)
    corpus = b"".join(p.read_bytes() for p in sorted(d.iterdir()))
    starts = [0, *[m.end() for m in re.finditer(b"\n", corpus)][:-1]]
    recall = {}
    for kind in KINDS:
        pieces, planted, pos = [], [], 0
        for at in sorted(rng.sample(starts, args.plant)):
            line, secret = fake(kind, rng)
            pieces.append(corpus[pos:at])
            offset = sum(len(p) for p in pieces) + line.encode().index(secret.encode())
            pieces.append(line.encode() + b"\n")
            planted.append((offset, secret.encode()))
            pos = at
        pieces.append(corpus[pos:])
        data = b"".join(pieces)
        out, _ = mask(data)
        found = sum(all(out[o + i:o + i + 4] != s[i:i + 4] for i in range(0, len(s) - 3)) for o, s in planted)
        recall[kind] = round(found / len(planted) * 100, 2)
    report["recall_percent"] = recall
    report["fp_examples"] = examples[:20]
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
