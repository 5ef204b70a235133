"""The demo: reproduce the incident under the legacy id policy, show the fix, prove both."""
