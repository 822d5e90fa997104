"""Configuration read at start-up: the server's settings and the policy files."""
