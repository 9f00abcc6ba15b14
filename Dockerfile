# syntax=docker/dockerfile:1
#
# s3spill container image: the CLI (`s3spill gc run`, `doctor`, `demo`) as a non-root user.
# Two stages: `build` makes a wheel and a virtualenv; the final stage copies only the
# virtualenv onto the same pinned base, with no compiler, no pip and no source tree.
#
# The base is pinned by tag AND digest (the multi-platform manifest of
# python:3.11.13-slim-bookworm), written out in both FROM lines so scanners see the pin.
# To refresh it: docker buildx imagetools inspect python:3.11.13-slim-bookworm

FROM python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1 AS build

# Extras to bake in, e.g. "local" for the embedded moto demo store; empty for production.
ARG S3SPILL_EXTRAS="metrics"
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY s3spill ./s3spill
RUN python -m venv /opt/s3spill \
 && python -m pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/s3spill/bin/pip install "$(ls /wheels/s3spill-*.whl)${S3SPILL_EXTRAS:+[${S3SPILL_EXTRAS}]}" \
 && /opt/s3spill/bin/pip uninstall --yes pip setuptools wheel \
 && /opt/s3spill/bin/s3spill --help >/dev/null

FROM python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1

LABEL org.opencontainers.image.title="s3spill" \
      org.opencontainers.image.description="Spill oversized LLM tool output to immutable S3 objects; GC batch job" \
      org.opencontainers.image.licenses="Apache-2.0"

# No package manager tooling left in the runtime image, and a fixed non-root uid/gid that
# the Kubernetes securityContext (runAsUser 10001) and docker-compose rely on.
RUN python -m pip uninstall --yes --quiet pip setuptools wheel \
 && groupadd --system --gid 10001 s3spill \
 && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --shell /usr/sbin/nologin s3spill

COPY --from=build /opt/s3spill /opt/s3spill

ENV PATH=/opt/s3spill/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp

USER 10001:10001
WORKDIR /tmp

# A batch CLI, not a server: there is nothing to probe between runs. The job's exit status
# and its JSON report are the health signal.
HEALTHCHECK NONE

ENTRYPOINT ["s3spill"]
CMD ["--help"]
