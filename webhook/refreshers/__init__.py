"""Long-running loops that keep the admission path's snapshots fresh, and the state they swap them into.

The admission path reads `State.cluster` and `State.profiles` and never waits on the network: each
refresher builds a complete new snapshot in the background and swaps it in with one assignment.
"""
