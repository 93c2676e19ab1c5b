"""The offline repair engine ``builtin``: fault localisation plus source mutations.

``BuiltinProposer`` is a Proposer like a model's: the loop hands it a
ProposalRequest and gets a unified diff back. See ``engine.py`` for the
search and ``mutate.py`` for the operators; fault localisation is the
``localise`` worker's. Nothing is imported from other repairloop workers: the
loop passes ``run_tests`` and the localiser in.
"""

from __future__ import annotations

from repairloop.propose.builtin.engine import BuiltinProposer, Localiser
from repairloop.propose.builtin.mutate import mutate_source, mutations_at
from repairloop.propose.builtin.mutation import FAMILY_PRIORS, Mutation
from repairloop.propose.builtin.scratch import RunTests

__all__ = [
    "FAMILY_PRIORS",
    "BuiltinProposer",
    "Localiser",
    "Mutation",
    "RunTests",
    "mutate_source",
    "mutations_at",
]
