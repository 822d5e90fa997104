"""The HTTPS admission server: FastAPI app (`app.create_app`), TLS with rotation, metrics, logs, `serve`.

Nothing is imported here, so `pod-tailor <other command>` does not pay for FastAPI and uvicorn.
"""
