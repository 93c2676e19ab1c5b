"""The offline repair engine ``builtin``: fault localisation plus source mutations.

``BuiltinProposer`` is a Proposer like a model's: the loop hands it a
ProposalRequest and gets a unified diff back. See ``engine.py`` for the
search, ``localise.py`` for Ochiai localisation and ``mutate.py`` for the
operators. Nothing is imported from other repairloop workers: the loop passes
``run_tests`` in.
"""

from __future__ import annotations

from repairloop.propose.builtin.engine import BuiltinProposer
from repairloop.propose.builtin.localise import Localisation, Suspect, localise, ochiai
from repairloop.propose.builtin.mutate import mutate_source, mutations_at
from repairloop.propose.builtin.mutation import FAMILY_PRIORS, Mutation
from repairloop.propose.builtin.scratch import RunTests

__all__ = [
    "FAMILY_PRIORS",
    "BuiltinProposer",
    "Localisation",
    "Mutation",
    "RunTests",
    "Suspect",
    "localise",
    "mutate_source",
    "mutations_at",
    "ochiai",
]
