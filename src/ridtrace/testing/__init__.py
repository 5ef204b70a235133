"""Test-data generators: ridtrace/1 and Dynamo-format logs with known faults.

Not part of the forensics API: tests, benchmarks and the demo import it to make logs
whose incidents are known in advance.
"""

from ridtrace.testing.dynamo import DynamoSpec, DynamoTruth, write_dynamo_logs
from ridtrace.testing.synth import SynthSpec, SynthTruth, write_logs

__all__ = [
    "DynamoSpec",
    "DynamoTruth",
    "SynthSpec",
    "SynthTruth",
    "write_dynamo_logs",
    "write_logs",
]
