# syntax=docker/dockerfile:1

# routectl container image.
#
#   docker build -t routectl .                                # core + every plugin in providers/
#   docker build --build-arg PROVIDERS="aws" -t routectl .    # core + the named plugin(s) only
#
# Every plugin except providers/template (the example a new plugin is copied from, never
# shipped). The core's in-memory `fake` provider refuses to start unless
# --provider-option=demo=true says it is a demo.
#
# Runs as UID/GID 65532 (no passwd entry needed) and writes nothing to disk, so it works with
# a read-only root filesystem. The chart mounts an emptyDir at /tmp anyway.
#
# Reproducible: the base image is pinned by digest, and every third-party package comes from
# requirements/image.lock with its hashes (pip --require-hashes); the local trees are then
# installed without dependencies and without build isolation, so nothing unpinned is fetched.

ARG PYTHON_VERSION=3.11.14
ARG DEBIAN_RELEASE=trixie
# The digest of python:3.11.14-slim-trixie's multi-platform index as Docker published it: a
# tag moves when the image is rebuilt, a digest never does. Change the three together.
ARG PYTHON_DIGEST=sha256:5be45dbade29bebd6886af6b438fd7e0b4eb7b611f39ba62b430263f82de36d2

# ---- build: a virtualenv with routectl and the chosen provider plugins -----------------------
FROM python:${PYTHON_VERSION}-slim-${DEBIAN_RELEASE}@${PYTHON_DIGEST} AS build

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

RUN python -m venv /opt/routectl
ENV PATH=/opt/routectl/bin:$PATH

WORKDIR /src
# The locked third-party packages first (their own layer: it changes only with the lock).
COPY requirements/image.lock requirements/image.lock
RUN pip install --no-cache-dir --require-hashes -r requirements/image.lock

# .dockerignore lets in only what the build needs: pyproject.toml, README.md, LICENSE,
# requirements/, routectl/ and providers/.
COPY . .

# "all" (every providers/<name>/ with a pyproject.toml, except the example providers/template)
# or a space- or comma-separated list of provider directory names, e.g. "aws hcloud".
ARG PROVIDERS=all

# One pip run installs the core and the plugins together, without dependencies (all of them
# came from the lock above) and without build isolation (setuptools came from the lock too);
# pip check then proves the lock satisfies every requirement of what was installed.
# DL3013 (pin versions in pip) does not apply: the arguments are local source trees from this
# checkout, and their dependencies are pinned, with hashes, by requirements/image.lock.
# hadolint ignore=DL3013
RUN set -eu; \
    set -- .; \
    if [ "$PROVIDERS" = "all" ]; then \
        for dir in providers/*/; do \
            if [ -f "${dir}pyproject.toml" ] && [ "$dir" != "providers/template/" ]; then \
                set -- "$@" "./${dir%/}"; \
            fi; \
        done; \
    else \
        for name in $(printf "%s" "$PROVIDERS" | tr "," " "); do \
            if [ "$name" = "template" ]; then \
                echo "providers/template is the example to copy for a new plugin, not one to ship" >&2; \
                exit 1; \
            fi; \
            if [ ! -f "providers/${name}/pyproject.toml" ]; then \
                echo "unknown provider '${name}': no providers/${name}/pyproject.toml" >&2; \
                exit 1; \
            fi; \
            set -- "$@" "./providers/${name}"; \
        done; \
    fi; \
    echo "installing: $*"; \
    pip install --no-cache-dir --no-deps --no-build-isolation "$@"; \
    pip check; \
    routectl --help > /dev/null

# ---- runtime: the same Python, the virtualenv, nothing else --------------------------------
FROM python:${PYTHON_VERSION}-slim-${DEBIAN_RELEASE}@${PYTHON_DIGEST}

ARG VERSION=0.1.0
ARG REVISION=unknown
ARG PROVIDERS=all

LABEL org.opencontainers.image.title="routectl" \
      org.opencontainers.image.description="Keeps a cloud's pod-network routes in step with Kubernetes Nodes; replaces the cloud-controller-manager's route controller." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/python:${PYTHON_VERSION}-slim-${DEBIAN_RELEASE}" \
      org.opencontainers.image.base.digest="${PYTHON_DIGEST}" \
      io.routectl.providers="${PROVIDERS}"

ENV PATH=/opt/routectl/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# Owned by root and not writable by the runtime user; bytecode was compiled by pip at build time.
COPY --from=build /opt/routectl /opt/routectl

USER 65532:65532
WORKDIR /tmp

# /metrics, /healthz, /readyz: plain HTTP (--metrics-bind-address, default 0.0.0.0:10290) or,
# as the chart runs it, HTTPS with delegated authn/authz (--secure-port=10290).
EXPOSE 10290

ENTRYPOINT ["routectl"]
CMD ["run"]
