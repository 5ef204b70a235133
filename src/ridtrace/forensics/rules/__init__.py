"""The analysis rules over per-span columns (`rules.columns`) and their findings."""

# Callers above callers followed at most: a loop of spans logged as each other's parents
# (which Jaeger cannot draw either) stops there. Here, not in `rules.columns`, so the
# live rules (`live.spans`) take it without importing pandas.
MAX_CALLER_DEPTH = 16
# How much earlier than its host (Dynamo's http-request) a span logged inside it without
# its parent may start, in µs (`records.nesting`, `live.window`): the host's start dated
# back by a whole number of milliseconds (`latency_ms`) may be that much late.
INNER_START_LEEWAY_US = 1_000

# The batch rules climb by pointer jumping (each round follows the chain as far again
# as all rounds before it), so this many rounds reach a caller 2**32 spans up: every
# chain a log can hold, where 16 single steps counted a deeper chain as several callers.
CALLER_JUMP_ROUNDS = 32
