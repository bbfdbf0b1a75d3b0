# The app's image: web (gunicorn, the default command) and worker (docker-compose.yml). Runs
# as the unprivileged user `cardsort`; the code is root's and read-only to it, /data (uploads,
# exports, collected static files) is its own. tests/stack checks this file.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 CARDSORT_DATA_DIR=/data PORT=8000
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
RUN groupadd --system --gid 10001 cardsort \
    && useradd --system --uid 10001 --gid cardsort --home-dir /data --shell /usr/sbin/nologin cardsort \
    && mkdir -p /data/media \
    && chown -R cardsort:cardsort /data
COPY . .
RUN DEBUG=0 SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    ALLOWED_HOSTS=localhost python manage.py collectstatic --noinput \
    && chown -R cardsort:cardsort /data
USER cardsort:cardsort
EXPOSE 8000
# GET /healthz on this container's gunicorn (scripts/healthcheck; compose's worker overrides it)
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python", "scripts/healthcheck", "web"]
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
