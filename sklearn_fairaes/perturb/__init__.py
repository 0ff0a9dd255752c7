"""Controlled edits of essays, and an audit of how a scoring model reacts to them.

Every perturbation is a seeded scikit-learn transformer: a list of essays in,
a list of edited essays out, with :meth:`~BasePerturbation.transform_with_records`
saying what changed in each (see :class:`Edit` and :class:`PerturbationRecord`;
:func:`apply_edits` reproduces the edited essay from the record). The input is
never modified, empty essays come back unchanged, and an essay's edit depends
only on ``random_state`` and its own text.

Meaning-preserving (a fair score stays within the tolerance):

======================  ======================  ==========================================
name                    class                   edit
======================  ======================  ==========================================
``synonym``             SynonymParaphrase       WordNet synonyms for some content words
``typos``               TypoInjection           one typo in some words
``case_whitespace``     CaseWhitespaceNoise     case flips, doubled spaces
``contractions``        ContractionSwap         ``don't`` <-> ``do not``, ...
``placeholders``        PlaceholderRenaming     ``@PERSON1`` -> ``@PERSON3``, consistently
======================  ======================  ==========================================

Quality- or meaning-changing (a fair score drops, or for negation changes):

=======================  =====================  ===========================================
name                     class                  edit
=======================  =====================  ===========================================
``sentence_shuffle``     SentenceShuffle        sentences in a random order
``sentence_deletion``    SentenceDeletion       some sentences deleted
``sentence_repetition``  SentenceRepetition     some sentences written twice (padding)
``off_topic``            OffTopicParagraph      an unrelated paragraph appended
``prompt_stuffing``      PromptStuffing         the prompt's words inserted at random
``negation``             Negation               sentences negated by rules (expected: change)
``word_salad``           WordSalad              random English words, as many as the essay's
``word_scramble``        WordScramble           the essay's own words in a random order
=======================  =====================  ===========================================

:func:`perturbation_audit` runs them against a fitted model and
:func:`plot_perturbation_audit` draws its summary. See ``docs/perturbations.md``
for the method, each perturbation's limits and a reading guide.
"""

from ._audit import perturbation_audit, plot_perturbation_audit
from ._base import (
    EXPECTED_DIRECTIONS,
    BasePerturbation,
    Edit,
    PerturbationRecord,
    apply_edits,
)
from ._meaning import (
    CaseWhitespaceNoise,
    ContractionSwap,
    PlaceholderRenaming,
    SynonymParaphrase,
    TypoInjection,
)
from ._quality import (
    OFF_TOPIC_PARAGRAPHS,
    Negation,
    OffTopicParagraph,
    PromptStuffing,
    SentenceDeletion,
    SentenceRepetition,
    SentenceShuffle,
    WordSalad,
    WordScramble,
)
from ._registry import (
    DEFAULT_PERTURBATIONS,
    PERTURBATION_NAMES,
    PERTURBATIONS,
    get_perturbation,
)

__all__ = [
    "DEFAULT_PERTURBATIONS",
    "EXPECTED_DIRECTIONS",
    "OFF_TOPIC_PARAGRAPHS",
    "PERTURBATIONS",
    "PERTURBATION_NAMES",
    "BasePerturbation",
    "CaseWhitespaceNoise",
    "ContractionSwap",
    "Edit",
    "Negation",
    "OffTopicParagraph",
    "PerturbationRecord",
    "PlaceholderRenaming",
    "PromptStuffing",
    "SentenceDeletion",
    "SentenceRepetition",
    "SentenceShuffle",
    "SynonymParaphrase",
    "TypoInjection",
    "WordSalad",
    "WordScramble",
    "apply_edits",
    "get_perturbation",
    "perturbation_audit",
    "plot_perturbation_audit",
]
