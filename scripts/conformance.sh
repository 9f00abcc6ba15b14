#!/usr/bin/env bash
# Conformance of an S3 implementation we did not write:
#   scripts/conformance.sh localstack|localstack-2026.3|s3rver|moto [--update]
# (localstack is LocalStack 4.14.0, localstack-2026.3 is LocalStack 2026.3.0; both pinned)
#
# Installs the server (pinned, cached under $S3SPILL_CONFORMANCE_CACHE, default
# ~/.cache/s3spill-conformance; a clean machine installs it from PyPI / npm), starts it on
# 127.0.0.1 on a free port, creates a versioned bucket where the server can, then runs
#   1. the store conformance and race suites against it (pytest -m endpoint),
#   2. s3spill doctor on the versioned bucket,
#   3. a comparison of both with what was measured before (scripts/conformance-expected.json;
#      --update records this run instead),
#   4. end to end through the CLI: spill -> read -> ref publish -> gc plan/apply, or, on a
#      server that ignores conditions (s3rver, the negative control), checks that s3spill
#      refuses.
# It stops what it started on exit. Exit 0 only when everything matched.
# Environment: S3SPILL_PYTHON (the project's python, default .venv/bin/python),
# S3SPILL_PYTHON313 (a Python >= 3.12 for LocalStack, default: found under pyenv).
set -euo pipefail

BACKEND=${1:-}
UPDATE=${2:-}
case "$BACKEND" in localstack | localstack-2026.3 | s3rver | moto) ;; *)
  echo "usage: $0 localstack|localstack-2026.3|s3rver|moto [--update]" >&2
  exit 2
  ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PY=${S3SPILL_PYTHON:-$ROOT/.venv/bin/python}
CACHE=${S3SPILL_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/s3spill-conformance}
# Pins that keep localstack-core importable on Python 3.13 (newer majors break it: cbor2 6
# dropped the private module its S3 parser imports, and its plugin loader then silently
# finds no runtime; pyOpenSSL 25 dropped X509.add_extensions, which its TLS certificate uses).
if [ "$BACKEND" = localstack-2026.3 ]; then
  LOCALSTACK_VERSION=2026.3.0 # the calendar-versioned line; host mode needs no auth token
else
  LOCALSTACK_VERSION=4.14.0
fi
LOCALSTACK_PINS=("localstack-core[runtime]==$LOCALSTACK_VERSION" "cbor2<6" "service-identity"
  "pyopenssl<25" "cryptography<45")
S3RVER_VERSION=3.7.1
BUCKET=s3spill-conformance
WORK=$(mktemp -d "${TMPDIR:-/tmp}/s3spill-conformance.XXXXXX")
SERVER_PID=""
T0=$SECONDS

log() { echo "[conformance $BACKEND +$((SECONDS - T0))s] $*"; }

cleanup() {
  local rc=$?
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    # The server runs in a session of its own (setsid): end its whole process group.
    kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
  fi
  exec 9>&- 2>/dev/null || true
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap "exit 143" TERM
trap "exit 130" INT

find_python313() {
  if [ -n "${S3SPILL_PYTHON313:-}" ]; then echo "$S3SPILL_PYTHON313"; return; fi
  local cand
  # pyenv shims exist for versions that are not selected, so try each candidate for real.
  for cand in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python python3.13 python3.12 python3; do
    if "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$cand"
      return
    fi
  done
  echo "LocalStack needs Python >= 3.12: set S3SPILL_PYTHON313" >&2
  return 1
}

install_localstack() {
  VENV=$CACHE/localstack-$LOCALSTACK_VERSION
  if [ -f "$VENV/.installed" ]; then return; fi
  local started=$SECONDS py313
  py313=$(find_python313)
  log "installing LocalStack $LOCALSTACK_VERSION with $py313 into $VENV"
  rm -rf "$VENV"
  mkdir -p "$CACHE"
  "$py313" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${LOCALSTACK_PINS[@]}" 2>&1 |
    grep -v "^WARNING: Location" || true
  "$VENV/bin/python" -c "import localstack.runtime.main, rolo" # fail here, not at start
  touch "$VENV/.installed"
  log "LocalStack installed in $((SECONDS - started)) s"
}

install_s3rver() {
  S3RVER_DIR=$CACHE/s3rver-$S3RVER_VERSION
  if [ -f "$S3RVER_DIR/.installed" ]; then return; fi
  local started=$SECONDS
  command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null; }
  log "installing s3rver $S3RVER_VERSION into $S3RVER_DIR"
  rm -rf "$S3RVER_DIR"
  mkdir -p "$S3RVER_DIR"
  npm install --prefix "$S3RVER_DIR" --no-audit --no-fund --loglevel=error "s3rver@$S3RVER_VERSION" >/dev/null
  touch "$S3RVER_DIR/.installed"
  log "s3rver installed in $((SECONDS - started)) s"
}

PORT=$("$PY" -c "from s3spill.testing import free_port; print(free_port())")
ENDPOINT=http://127.0.0.1:$PORT
export AWS_ENDPOINT_URL=$ENDPOINT AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
unset AWS_PROFILE AWS_SESSION_TOKEN

case "$BACKEND" in
  localstack | localstack-2026.3)
    install_localstack
    export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
    mkdir -p "$WORK/localstack"
    # Host mode with every directory under $WORK (in a container LocalStack would take
    # /var/lib/localstack), no DNS server, no certificate download, no telemetry.
    SERVICES=s3 GATEWAY_LISTEN=127.0.0.1:$PORT PERSISTENCE=0 DNS_ADDRESS=0 \
      SKIP_SSL_CERT_DOWNLOAD=1 DISABLE_EVENTS=1 OVERRIDE_IN_DOCKER=0 FILESYSTEM_ROOT=$WORK/localstack \
      setsid "$VENV/bin/python" -m localstack.runtime.main >"$WORK/server.log" 2>&1 </dev/null &
    ;;
  s3rver)
    install_s3rver
    export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
    mkdir -p "$WORK/s3rver"
    setsid node "$S3RVER_DIR/node_modules/s3rver/bin/s3rver.js" -d "$WORK/s3rver" -a 127.0.0.1 \
      -p "$PORT" --silent >"$WORK/server.log" 2>&1 </dev/null &
    ;;
  moto)
    # s3spill.testing serves moto one request at a time until its stdin closes: hold a pipe.
    export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
    mkfifo "$WORK/moto.in"
    exec 9<>"$WORK/moto.in"
    setsid "$PY" -m s3spill.testing --port "$PORT" >"$WORK/server.log" 2>&1 <"$WORK/moto.in" &
    ;;
esac
SERVER_PID=$!

# Ready when ListBuckets answers; then the bucket, versioned where the server allows it.
if ! "$PY" - "$BUCKET" <<'EOF'; then
import sys, time
import boto3
from botocore.exceptions import ClientError, EndpointConnectionError

client = boto3.client("s3")
deadline = time.monotonic() + 90
while True:
    try:
        client.list_buckets()
        break
    except (EndpointConnectionError, ClientError, OSError) as exc:
        if time.monotonic() > deadline:
            sys.exit(f"server did not answer in 90 s: {exc}")
        time.sleep(0.3)
client.create_bucket(Bucket=sys.argv[1])
try:
    client.put_bucket_versioning(Bucket=sys.argv[1], VersioningConfiguration={"Status": "Enabled"})
    status = client.get_bucket_versioning(Bucket=sys.argv[1]).get("Status", "Disabled")
except ClientError as exc:
    status = f"refused ({exc.response['Error']['Code']})"
print(f"bucket {sys.argv[1]}: versioning {status}")
EOF
  tail -40 "$WORK/server.log" >&2
  exit 1
fi
log "server up on $ENDPOINT"

# 1. The suites, endpoint backend only. Failures are results here; step 3 judges them.
#    A fixed Hypothesis seed: the hostile-key examples are the same on every run.
set +e
S3SPILL_CONFORMANCE_ENDPOINT=$ENDPOINT S3SPILL_CONFORMANCE_REPORT=$WORK/report.json \
  "$PY" -m pytest -q -n 0 -p tests.store.conformance_report -p no:cacheprovider -m endpoint --hypothesis-seed=0 \
  tests/store/test_conformance.py tests/store/test_races.py >"$WORK/pytest.log" 2>&1
PYTEST_RC=$?
set -e
if [ ! -s "$WORK/report.json" ]; then
  cat "$WORK/pytest.log" >&2
  echo "the suite produced no report (pytest exit $PYTEST_RC)" >&2
  exit 1
fi
log "suite done (pytest exit $PYTEST_RC)"

# 2. The doctor on the versioned bucket.
set +e
"$PY" -m s3spill --store "s3://$BUCKET/doctor" doctor --json >"$WORK/doctor.json" 2>"$WORK/doctor.err"
DOCTOR_RC=$?
set -e
log "doctor exit $DOCTOR_RC"

# 3. Compare with what was measured before.
if ! "$PY" -m tests.store.conformance_report check "$BACKEND" --report "$WORK/report.json" \
  --doctor "$WORK/doctor.json" --doctor-exit "$DOCTOR_RC" $UPDATE; then
  grep -E "^(FAILED|ERROR)" "$WORK/pytest.log" >&2 || true
  exit 1
fi

# 4. End to end through the CLI, one session on the versioned bucket.
export S3SPILL_STORE=s3://$BUCKET/e2e S3SPILL_SESSION=conformance-e2e
S3SPILL=("$PY" -m s3spill)
seq 1 20000 >"$WORK/keep.txt"
seq 1 9000 >"$WORK/drop.txt"
source_id() { "$PY" -c "import json,sys; print(json.load(sys.stdin)['source_id'])"; }
fail() { echo "conformance $BACKEND: $*" >&2; exit 1; }

if [ "$BACKEND" = s3rver ]; then
  # Negative control: s3rver ignores every conditional header, so s3spill must refuse.
  [ "$DOCTOR_RC" -ne 0 ] || fail "doctor passed a store that ignores conditional writes"
  # Spilling may itself be refused once writes check the store's capabilities; either way
  # GC must refuse and nothing spilled may disappear.
  set +e
  KEEP=$("${S3SPILL[@]}" spill --tool seq --json <"$WORK/keep.txt" 2>"$WORK/spill.err" | source_id 2>/dev/null)
  DROP=$("${S3SPILL[@]}" spill --tool seq --json <"$WORK/drop.txt" 2>>"$WORK/spill.err" | source_id 2>/dev/null)
  set -e
  log "spill on s3rver: ${DROP:-refused}"
  set +e
  "${S3SPILL[@]}" gc run --all --apply --orphan-ttl 0s --session-ttl 0s \
    --allow-dangerously-short-ttl >"$WORK/gc.json" 2>"$WORK/gc.err"
  GC_RC=$?
  set -e
  [ "$GC_RC" -ne 0 ] || fail "gc run --apply ran on a store that ignores conditional deletes"
  log "gc refused (exit $GC_RC): $(grep -v '^{' "$WORK/gc.err" | head -c 300)"
  if [ -n "$DROP" ]; then
    "${S3SPILL[@]}" read --limit 1 "$DROP" >/dev/null || fail "a refused GC deleted an artifact"
  fi
  # --- journal refusal (issue 12, StoreCapabilityError) ------------------------------
  # The journal refuses a store without conditional writes (StoreCapabilityError), so
  # `ref publish` must exit non-zero here, for that reason. JOURNAL_MUST_REFUSE=0 only records.
  JOURNAL_MUST_REFUSE=${JOURNAL_MUST_REFUSE:-1}
  set +e
  "${S3SPILL[@]}" ref publish "${KEEP:-artifact:00000000000000000000000000000000:none:0}" \
    >"$WORK/ref.out" 2>"$WORK/ref.err"
  REF_RC=$?
  set -e
  log "ref publish on s3rver: exit $REF_RC (journal refusal enforced: $JOURNAL_MUST_REFUSE)"
  if [ "$JOURNAL_MUST_REFUSE" = 1 ]; then
    [ "$REF_RC" -ne 0 ] || fail "the lease journal accepted a store that ignores compare-and-swap"
    grep -q "StoreCapabilityError" "$WORK/ref.err" ||
      fail "ref publish failed, but not with StoreCapabilityError: $(head -c 300 "$WORK/ref.err")"
  fi
  # --- end of the journal refusal check -----------------------------------------------
  log "negative control OK: doctor exit $DOCTOR_RC, gc exit $GC_RC, nothing deleted"
else
  KEEP=$("${S3SPILL[@]}" spill --tool seq --json <"$WORK/keep.txt" | source_id)
  DROP=$("${S3SPILL[@]}" spill --tool seq --json <"$WORK/drop.txt" | source_id)
  "${S3SPILL[@]}" read --offset 19999 --limit 1 "$KEEP" | grep -q "^ *20000	20000$" ||
    fail "read of a spilled artifact did not return its last line"
  "${S3SPILL[@]}" ref publish "$KEEP" >/dev/null
  # Zero TTLs so the unreferenced artifact is due at once; apply runs under its own policy
  # (a plan may only narrow it), so it gets them too.
  SHORT=(--orphan-ttl 0s --session-ttl 0s --allow-dangerously-short-ttl)
  "${S3SPILL[@]}" gc plan --all "${SHORT[@]}" --out "$WORK/plan.jsonl" >"$WORK/plan.json"
  "${S3SPILL[@]}" gc apply "${SHORT[@]}" "$WORK/plan.jsonl" >"$WORK/apply.json"
  "$PY" - "$WORK/plan.json" "$WORK/apply.json" "$WORK/plan.jsonl" <<'EOF' || fail "GC did not do what was planned"
import json, sys
plan, apply = (json.load(open(p)) for p in sys.argv[1:3])
entries = [json.loads(line) for line in open(sys.argv[3])]
# The CLI's reads record usage events, which a zero session TTL also makes due: count
# the artifacts alone, and require every planned object (of any kind) to be deleted.
doomed = [e["object_kind"] for e in entries if e.get("status") == "planned_delete"]
assert doomed.count("artifact") == 1, doomed
assert set(doomed) <= {"artifact", "usage_log"}, doomed
assert plan["counts"].get("retained_referenced") == 1, plan["counts"]
assert apply["counts"].get("deleted") == len(doomed), (apply["counts"], doomed)
print(f"gc: planned {plan['counts']}, applied {apply['counts']} ({apply['delete_method']})")
EOF
  "${S3SPILL[@]}" read --offset 19999 --limit 1 "$KEEP" | grep -q "^ *20000	20000$" ||
    fail "GC removed or damaged the referenced artifact"
  if "${S3SPILL[@]}" read --limit 1 "$DROP" >/dev/null 2>&1; then
    fail "the unreferenced artifact survived gc apply"
  fi
  log "end to end OK: spill -> read -> ref publish -> gc plan/apply"
fi
log "done: conformance of $BACKEND as measured before"
