"""Budgets: what each thread may spend, and what it spent.

Attach a ``Budget`` to a graph (``compile(builder, attach=[Budget(max_model_calls=20)])``);
the next superstep or model call that would pass a cap raises
``BudgetExceededError``. ``ledger`` / ``aledger`` read what a thread spent
(docs/budgets.md).
"""

from neograph_ext._budget_read import aledger, ledger
from neograph_ext._public import publish
from neograph_ext.decision._budget import Budget, Ledger, Spend
from neograph_ext.decision._errors import BudgetExceededError

__all__ = ["Budget", "BudgetExceededError", "Ledger", "Spend", "aledger", "ledger"]
publish(__name__, globals(), __all__)
