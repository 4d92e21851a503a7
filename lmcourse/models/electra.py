"""ELECTRA (Clark et al. 2020): replaced-token detection instead of masked-token prediction.

A masked LM learns from the ~15% of positions it masks. ELECTRA learns from *every*
position. A small **generator** ``G`` (an MLM) fills the masked positions with samples
``x̂_i ~ p_G(x_i | x_masked)``; a **discriminator** ``D`` reads the corrupted sequence and
says, for each token, whether it is the original or a replacement:

    L_MLM  = E[ sum_{i masked} -log p_G(x_i | x_masked) ]
    L_Disc = E[ sum_{t=1..n} -1(x̂_t = x_t) log D(x̂, t) - 1(x̂_t != x_t) log(1 - D(x̂, t)) ]
    min  L_MLM + λ L_Disc,   λ = 50

with ``D(x̂, t) = sigmoid(w^T h_t)`` the probability that token ``t`` is *original*. A
sampled token that happens to equal the original counts as original. The sampling step
is not differentiable, so the discriminator's loss does not reach the generator: the two
are trained together but not adversarially. After pre-training the generator is thrown
away and the discriminator is fine-tuned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse import progress_bar
from lmcourse.masking import mask_tokens
from lmcourse.models.bert import BertConfig, BertModel
from lmcourse.models.pretraining import BertForPreTraining, pair_batches, warmup_then_decay

__all__ = ["ElectraDiscriminator", "ElectraHistory", "electra_loss", "pretrain_electra",
           "replace_masked", "share_embeddings"]


class ElectraDiscriminator(nn.Module):
    """A :class:`BertModel` and a per-token head ``w^T GELU(W h_t + b)``: one logit per
    token, positive for *replaced* (the sign convention of the released code)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.electra = BertModel(config)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.out = nn.Linear(config.hidden_size, 1)
        self.dense.apply(BertModel._init_weights)
        self.out.apply(BertModel._init_weights)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.electra(input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state
        return self.out(F.gelu(self.dense(h))).squeeze(-1)  # B x T


def share_embeddings(generator: BertForPreTraining, discriminator: ElectraDiscriminator) -> None:
    """ELECTRA's tying (Clark et al. 2020, section 3.2): the generator reads the
    discriminator's token, position and segment embeddings, and its MLM head scores through
    the same token matrix, so both networks train one set of embeddings. A narrower
    generator keeps the discriminator's embedding width ``E = H_D`` and projects it to its
    own ``H_G`` (``embedding_size``, as ALBERT's factorisation)."""
    shared = discriminator.electra.embeddings
    width = generator.bert.embeddings.word_embeddings.embedding_dim
    if width != shared.word_embeddings.embedding_dim:
        raise ValueError(f"the generator's embeddings are {width} wide, the discriminator's "
                         f"{shared.word_embeddings.embedding_dim}: build the generator with "
                         f"embedding_size={shared.word_embeddings.embedding_dim} to share them")
    generator.bert.embeddings = shared
    generator.mlm.word_embeddings = shared.word_embeddings


@torch.no_grad()
def replace_masked(input_ids: torch.Tensor, labels: torch.Tensor, generator_logits: torch.Tensor,
                   rng: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The discriminator's input: ``input_ids`` (the *original* tokens) with every selected
    position (``labels != -100``) replaced by a sample from the generator's softmax
    (``generator_logits``: one row per selected position, in the order of
    ``labels[labels != -100]``). Returns ``(corrupted_ids, is_replaced)``; a sample equal to
    the original is not a replacement."""
    selected = labels != -100
    if generator_logits.shape[0] != int(selected.sum()):
        raise ValueError(f"{generator_logits.shape[0]} rows of generator logits for "
                         f"{int(selected.sum())} selected positions: they must match")
    probs = F.softmax(generator_logits.float(), dim=-1)
    samples = torch.multinomial(probs, 1, generator=rng).squeeze(-1).to(input_ids.device)
    corrupted = input_ids.clone()
    corrupted[selected] = samples
    return corrupted, corrupted != input_ids


def electra_loss(generator_logits: torch.Tensor, targets: torch.Tensor,
                 discriminator_logits: torch.Tensor, is_replaced: torch.Tensor,
                 attention_mask: torch.Tensor, weight: float = 50.0
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(L_MLM + λ L_Disc, L_MLM, L_Disc)``: the generator's mean cross-entropy at the
    selected positions and the discriminator's mean binary cross-entropy over all real
    (non-padding) tokens."""
    mlm = F.cross_entropy(generator_logits, targets)
    real = attention_mask.bool()
    disc = F.binary_cross_entropy_with_logits(discriminator_logits[real],
                                              is_replaced[real].float())
    return mlm + weight * disc, mlm, disc


@dataclass
class ElectraHistory:
    """Per-step generator (MLM) and discriminator losses, and the replaced share."""

    mlm: list[float] = field(default_factory=list)
    disc: list[float] = field(default_factory=list)
    replaced: list[float] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0


def pretrain_electra(generator: BertForPreTraining, discriminator: ElectraDiscriminator,
                     pairs: Sequence[tuple[Sequence[int], Sequence[int], int]], *, steps: int,
                     batch_size: int, special_ids: Sequence[int], cls_id: int, sep_id: int,
                     pad_id: int, mask_id: int, max_len: int = 64, lr: float = 1e-3,
                     warmup: float = 0.1, weight_decay: float = 0.01, weight: float = 50.0,
                     seed: int = 0, progress: bool = True, stop_after: int | None = None,
                     callback: Callable[[int, ElectraHistory], None] | None = None
                     ) -> ElectraHistory:
    """Train generator and discriminator jointly on ``L_MLM + λ L_Disc`` with the recipe
    of :func:`~lmcourse.models.pretraining.pretrain` (same batches for the same seed, one
    AdamW over both networks, warm-up then linear decay, clipping at 1). ``stop_after`` and
    ``callback(step, history)`` as in ``pretrain`` (the callback's time is not counted)."""

    device = next(discriminator.parameters()).device
    vocab_size = generator.mlm.bias.numel()
    masks = torch.Generator().manual_seed(seed)
    samples = torch.Generator(device=device).manual_seed(seed)
    # shared embeddings (share_embeddings) belong to both networks: each tensor once
    params = list({id(p): p for p in (*generator.parameters(),
                                      *discriminator.parameters())}.values())
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    schedule = warmup_then_decay(optimizer, steps, warmup)
    history, start, paused = ElectraHistory(), time.perf_counter(), 0.0
    generator.train()
    discriminator.train()
    batches = pair_batches(pairs, steps=steps, batch_size=batch_size, cls_id=cls_id,
                           sep_id=sep_id, pad_id=pad_id, max_len=max_len, seed=seed)
    for _, batch in progress_bar(batches, progress, total=steps, desc="ELECTRA"):
        masked, labels = mask_tokens(batch["input_ids"], mask_id, vocab_size, special_ids,
                                     generator=masks)
        batch = {k: v.to(device) for k, v in batch.items()}
        masked, labels = masked.to(device), labels.to(device)
        predict = labels != -100
        gen_logits, _ = generator(masked, batch["token_type_ids"], batch["attention_mask"],
                                  predict=predict)
        corrupted, is_replaced = replace_masked(batch["input_ids"], labels, gen_logits, samples)
        disc_logits = discriminator(corrupted, batch["token_type_ids"], batch["attention_mask"])
        loss, mlm, disc = electra_loss(gen_logits, labels[predict], disc_logits, is_replaced,
                                       batch["attention_mask"], weight)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        history.mlm.append(mlm.item())
        history.disc.append(disc.item())
        real = batch["attention_mask"].bool()
        history.replaced.append(float(is_replaced[real].float().mean()))
        history.tokens += int(real.sum())
        history.seconds = time.perf_counter() - start - paused
        if callback is not None:
            callback(len(history.mlm), history)
            generator.train()
            discriminator.train()
            paused = time.perf_counter() - start - history.seconds
        if stop_after is not None and len(history.mlm) >= stop_after:
            break
    history.seconds = time.perf_counter() - start - paused
    generator.eval()
    discriminator.eval()
    return history
