"""The coordination-gap report (`alemlite gap`): a language model's team against the shipped
MARL reference agents and the environment's scripted teams, on the same seeds, difficulties
and team sizes, with mixed teams (model seats beside trained seats).

- `config`: the command's options and the strata (difficulty x team size) they sweep;
- `plan`: the teams of each stratum, and which checkpoint fits where (or why none does);
- `play`: each team played by the evaluation machinery (the LLM bridge or the compiled path);
- `scores`: base-task and coordination scores, and the gaps with stratified bootstrap
  intervals;
- `report`, `plots`: the Markdown report and its figures; `main`: the whole command.
"""
