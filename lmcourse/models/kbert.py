"""K-BERT (Liu et al. 2020): knowledge-graph triples injected into a sentence.

For an entity of the sentence with triples ``(entity, relation, object)`` in the knowledge
graph, K-BERT inserts ``relation object`` as a *branch* right after the entity: the sentence
becomes a tree, flattened into one sequence. Two devices keep the branches from changing
the sentence's meaning:

* **soft positions**: the sentence (the trunk) keeps the position indices it had without
  the branches, and a branch continues counting from its entity, so ``Cook CEO Apple``
  reads as a phrase while ``is`` still sits at position 3 after ``Cook`` at 2;
* **the visible matrix** ``M``: token ``i`` may attend to token ``j`` only if both are on
  the trunk, or both in the same branch, or one is a branch's token and the other its
  entity. It enters self-attention as a mask,

      softmax(Q K^T / sqrt(d) + M'),   M'_ij = 0 if visible, -inf otherwise,

  i.e. a boolean mask ``visible`` (``True`` = allowed) in :mod:`lmcourse.models.attention`.

In the first layer only the entity reads its branches; from the second layer on, the
rest of the sentence sees the knowledge *through* the entity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

__all__ = ["SentenceTree", "sentence_tree"]


@dataclass
class SentenceTree:
    """The flattened sentence tree: ``tokens`` in sequence order, their ``soft_positions``
    (LongTensor), the ``visible`` matrix (``n x n`` bool, ``True`` = may attend) and which
    tokens are injected knowledge (``is_knowledge``, bool)."""

    tokens: list[str]
    soft_positions: torch.Tensor
    visible: torch.Tensor
    is_knowledge: torch.Tensor

    @property
    def hard_positions(self) -> torch.Tensor:
        """The plain indices ``0..n-1`` an ordinary BERT would use."""
        return torch.arange(len(self.tokens))


def sentence_tree(tokens: Sequence[str],
                  knowledge: Mapping[str, Sequence[tuple[str, str]]]) -> SentenceTree:
    """Insert each token's triples ``knowledge[token] = [(relation, object), ...]`` as
    branches after it, and build soft positions and the visible matrix.

    ``tokens`` is the sentence (e.g. ``["[CLS]", "Tim", "Cook", ...]``); an entity that
    occurs twice gets its branches after each occurrence.
    """
    for entity, triples in knowledge.items():
        for triple in triples:
            if len(triple) != 2:
                raise ValueError(f"knowledge[{entity!r}] must hold (relation, object) pairs, "
                                 f"got {triple!r}")
    flat: list[str] = []
    soft: list[int] = []
    branch: list[int] = []  # -1 on the trunk, else the branch's number
    anchor: dict[int, int] = {}  # branch number -> index of its entity in `flat`
    for position, token in enumerate(tokens):
        entity_index = len(flat)
        flat.append(token)
        soft.append(position)
        branch.append(-1)
        for relation, obj in knowledge.get(token, ()):
            number = len(anchor)
            anchor[number] = entity_index
            for offset, word in enumerate((relation, obj), start=1):
                flat.append(word)
                soft.append(position + offset)
                branch.append(number)
    b = torch.tensor(branch)
    on_trunk = b == -1
    same_branch = (b[:, None] == b[None, :]) & ~on_trunk[:, None]
    visible = (on_trunk[:, None] & on_trunk[None, :]) | same_branch
    for number, entity_index in anchor.items():
        members = b == number
        visible[entity_index, members] = True
        visible[members, entity_index] = True
    return SentenceTree(flat, torch.tensor(soft), visible, ~on_trunk)
