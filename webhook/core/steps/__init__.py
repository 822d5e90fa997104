"""The engine's steps: one module per feature, each reading and adding to one `Context`.

The order they run in is `webhook.core.engine.STEPS`; the engine's docstring says how to add one.
"""
