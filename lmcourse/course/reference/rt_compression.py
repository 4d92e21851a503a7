"""Reference ``rt-compression``: ``compression-stack``'s six compressions on the real
snippets, where the teacher is clearly above a tuned bag of words.

On the generated spoiler sample the fine-tuned teacher and the bag of words tie (0.968
each), so every compressed model is "as good as a bag of words" and no compression verdict
can mean anything. Here the teacher is MiniLM fine-tuned on 256 labelled Rotten Tomatoes
snippets (:mod:`.rt_teacher`, ``rt-distill``'s seed-0 teacher), compressed exactly as
``compression-stack`` does (:mod:`.compression_stack`: structured pruning, rank-96
feed-forward matrices, each with and without a distillation recovery, and distil → prune →
int8) on the 256 + 2,048 snippets of its pool, every model scored on the 2,570 test
snippets beside the bag of words tuned on the same 256 labels.
"""

from __future__ import annotations

from lmcourse.course.reference.compression_stack import RECIPE, baselines, corpus_of, train
from lmcourse.course.reference.recipe import ENCODER_FIRST_STEPS, Reference, no_weights

__all__ = ["RT_COMPRESSION", "RT_COMPRESSION_RECIPE"]

RT_COMPRESSION_RECIPE = {
    **RECIPE, "corpus": "rt",
    "teacher": "MiniLM fine-tuned on rt-distill's 256 labelled snippets of seed 0 by its "
               "recipe (160 steps; lmcourse.course.reference.rt_teacher)",
    "importance": "gate importance |dL/dxi| on 8 balanced batches of 32 training snippets",
    "data": "the teacher's pool: the 256 labelled snippets and rt-distill's 2,048 transfer "
            "snippets (true labels / the teacher's choice), with the teacher's logits",
    "eval": "ROC-AUC on the 2,570 test snippets; paired bootstrap interval of the difference "
            "from the teacher, 500 resamples; beside the bag of words on the same 256 labels, "
            "tuned on the tuning split",
}

RT_COMPRESSION = Reference(
    name="rt-compression",
    title="compression on real snippets: structured pruning, low rank and the "
          "distil-prune-quantize stack of a teacher well above the tuned bag of words",
    recipe=RT_COMPRESSION_RECIPE, train=train,
    evaluate=no_weights("rt-compression"),
    baselines=lambda recipe: dict(baselines(corpus_of(recipe))), seconds_per_seed=600.0,
    keep_weights=(), first_steps=ENCODER_FIRST_STEPS)
