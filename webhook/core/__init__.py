"""The pure decision core: Pod + policy + profile + cluster facts in, patch + warnings + explanation out.

Nothing in this package performs I/O or imports a web framework, so every rule can be tested as a table.
Its parts are named for their concern (`model/`, `policy/`, `sizing/`, `serving/`, `fit/`, `boost/`,
`resize/`) beside the pipeline (`engine.py`, `steps/`); docs/architecture.md says which may import which.
"""
