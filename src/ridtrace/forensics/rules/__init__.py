"""The analysis rules over per-span columns (`rules.columns`) and their findings."""

# Callers above callers followed at most: a loop of spans logged as each other's parents
# (which Jaeger cannot draw either) stops there. Here, not in `rules.columns`, so the
# live rules (`live.spans`) take it without importing pandas.
MAX_CALLER_DEPTH = 16
