# syntax=docker/dockerfile:1
# pod-tailor: build wheels into a virtualenv in one stage, copy only the virtualenv into a clean slim
# image. Every dependency ships as a manylinux wheel, so neither stage needs a compiler.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/pod-tailor
WORKDIR /src
# Dependencies in their own layer: rebuilt only when pyproject.toml changes, not on every code change.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && /opt/pod-tailor/bin/pip install --only-binary=:all: --requirement /tmp/requirements.txt
COPY README.md ./
COPY webhook ./webhook
RUN /opt/pod-tailor/bin/pip install --no-deps . \
    && /opt/pod-tailor/bin/python -m compileall -q /opt/pod-tailor/lib

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="pod-tailor" \
      org.opencontainers.image.description="Kubernetes mutating admission webhook: requests, limits, probes and a clean shutdown for Pods" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/pod-tailor /opt/pod-tailor
ENV PATH=/opt/pod-tailor/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Numeric non-root user (matches runAsUser in manifests/, so runAsNonRoot can be verified by the kubelet).
USER 10001:10001
EXPOSE 8443
ENTRYPOINT ["pod-tailor"]
CMD ["serve"]
