"""The pure decision core: Pod + policy + profile + cluster facts in, patch + warnings + explanation out.

Nothing in this package performs I/O or imports a web framework, so every rule can be tested as a table.
"""
