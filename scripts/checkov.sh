#!/usr/bin/env bash
# Run checkov over terraform/ and the Dockerfile in a venv of its own.
#
# checkov pins boto3==1.35.49 and packaging<24; installed beside s3spill it would downgrade
# boto3/botocore below what the S3 backend needs, so it never goes into .venv or the `dev`
# extra. Usage: scripts/checkov.sh   (creates .venv-checkov on first use; ~50 s to install)
set -euo pipefail
cd "$(dirname "$0")/.."
CHECKOV_VERSION=${CHECKOV_VERSION:-3.3.30}
VENV=${CHECKOV_VENV:-.venv-checkov}
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/checkov" ]; then
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "checkov==${CHECKOV_VERSION}"
fi
# Inline `#checkov:skip=CKV_...: reason` comments are honoured; tests/deploy/test_terraform.py
# checks that each one carries a reason. No skip list is passed here.
# Offline: no Prisma Cloud guideline download (BC_SKIP_MAPPING / --skip-download).
export BC_SKIP_MAPPING=TRUE
"$VENV/bin/checkov" --skip-download --quiet --compact --framework terraform --directory terraform "$@"
"$VENV/bin/checkov" --skip-download --quiet --compact --framework dockerfile --file Dockerfile "$@"
