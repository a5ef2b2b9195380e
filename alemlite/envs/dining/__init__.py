"""Dining philosophers: N philosophers, N forks, one ring, one shared resource problem.

Philosopher i's left fork is fork i, its right fork `(i + 1) mod N`. Each is
HUNGRY or EATING, holds none, one or both of its forks and counts its meals.

Actions: `0 WAIT, 1 GRAB_LEFT, 2 GRAB_RIGHT, 3 RELEASE`. With C > 0 message
tokens one action id also carries the token: `action = move + 4 * token`, token
0 silent, `num_actions = 4 * (C + 1)`, named like `GRAB_LEFT` and
`GRAB_LEFT+MSG_2`. A token is shown to both neighbours at the next step.
Out-of-range action ids act as a silent WAIT and count as invalid.

Simultaneous step (default): (1) RELEASE by a HUNGRY philosopher frees the forks
it held; (2) a grab counts only if its fork is free after (1), the lowest id
wins a contested fork; (3) a philosopher EATING at the start puts both forks
down at the end of the step, whatever it chose; (4) a HUNGRY philosopher holding
both forks becomes EATING and its meal is counted. Eating lasts one step.
Sequential mode: the same rules one philosopher at a time in id order, each on
the table the previous ones left; an EATING philosopher puts its forks down at
its turn and its move is ignored.

Decisions where the rules leave room:
- A grab of a fork the philosopher already holds, or by an EATING philosopher,
  does nothing and is a failed grab. A failed grab is any GRAB that does not
  end with the philosopher taking that fork in this step (held, lost to a
  lower id, taken earlier in sequential order).
- A valid action is one the action mask allowed on the state the actions were
  chosen from: WAIT always; a grab when HUNGRY and the fork is free (sequential:
  or held by an EATING lower-id neighbour, who puts it down first); RELEASE when
  holding a fork. An EATING philosopher's WAIT or RELEASE is valid.
- End of step, in this order: one-fork streaks are updated (HUNGRY holding
  exactly one fork), backoff drops (a streak >= `backoff_steps`, with
  probability `backoff_prob`), then the deadlock check on the resulting table;
  in release mode a deadlock frees every fork and play goes on.
- A deadlock at the last step is terminated, not truncated.

`alemlite.make("dining", num_philosophers=5, max_philosophers=15, ...)`; see
`DiningConfig` for every option, `rewards.py` for the two rewards and
`max_meals.py` for the meal budget the `paper` reward divides by.
"""

from __future__ import annotations

from alemlite.envs.dining.config import DiningConfig, DiningParams
from alemlite.envs.dining.env import DiningEnv
from alemlite.envs.dining.policies import DINING_POLICIES
from alemlite.envs.dining.spec import SPEC, DiningOptions, make_dining
from alemlite.envs.dining.state import DiningState

__all__ = [
    "DINING_POLICIES",
    "SPEC",
    "DiningConfig",
    "DiningEnv",
    "DiningOptions",
    "DiningParams",
    "DiningState",
    "make_dining",
]
