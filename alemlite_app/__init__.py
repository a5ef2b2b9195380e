"""The application layer: the `alemlite` command and its demo.

It sits above every other package (benchmarks, the study, baselines, the LLM bridge and
the `alemlite` library) and may import any of them; none of them imports it.
"""
