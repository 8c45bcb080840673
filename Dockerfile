# kefu-bot: a small, non-root image. Data (catalog, index, audit log) lives in the /data volume.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    DATABASE_PATH=/data/shop.db AUDIT_DB=/data/audit.db WEBHOOK_PORT=8080

# Chinese labels in operators' charts need a CJK font (the same Debian package CI installs).
RUN apt-get update \
    && apt-get install -y --no-install-recommends fonts-wqy-microhei \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md bot.py ./
COPY db ./db
COPY agent ./agent
COPY retrieval ./retrieval
COPY guardrails ./guardrails
COPY handlers ./handlers
RUN pip install . \
    && useradd --create-home --uid 10001 --user-group kefu \
    && mkdir -p /data && chown 10001:10001 /data \
    && ln -s /data /app/data   # /data/shop.db is the default catalog place (data/shop.db): a first start makes the demo

USER 10001:10001
VOLUME ["/data"]
EXPOSE 8080
# /healthz answers in both polling and webhook mode.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('WEBHOOK_PORT', '8080'), timeout=4)"]
STOPSIGNAL SIGTERM
CMD ["python", "bot.py"]
