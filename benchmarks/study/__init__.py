"""The coordination study on dining, one concern per module; run it with
`python -m benchmarks.coordination_study`."""
