"""Reference runs: a comparison run once, at the scale where the lesson shows, and committed.

A notebook's live run fits a CPU minute; when the effect it teaches needs more, the same
recipe is run to its real budget over three seeds and committed under ``reference/<name>/``.
The package, module by module:

- ``recipe``: what a reference is (:class:`Reference`, :class:`SeedRun`);
- ``result``: what it leaves behind (:class:`ReferenceResult`, the one reader and writer of
  ``result.json``; :func:`load`, :func:`load_weights`);
- ``registry``: the list of every reference (:data:`REFERENCES`);
- ``running``: :func:`run` (``make reference NAME``), :func:`live_run` (a notebook's first
  steps, checked against the committed ones), :func:`verify` (``make test``);
- ``scheduling``: the command line, several runs at once, longest first;
- ``report`` and ``figures``: the lines, tables and figures notebooks print from the files;
- one module per family of runs, each declaring its recipes and training functions:
  ``lm_char``, ``bilm_lee``, ``tiny_bert``, ``bench_arms`` (with ``pretraining_eval``, the
  fixed held-out masks and probe they are scored on), ``transfer_curve``, ``bert_heads``,
  ``distill_transfer``, ``distilbert_cosine``, ``tinybert_stages``, ``compression_stack``.

Notebooks use ``from lmcourse.course import reference`` and the names below.
"""

from lmcourse.course.reference.recipe import Reference, SeedRun, StaleReference
from lmcourse.course.reference.registry import REFERENCES
from lmcourse.course.reference.report import compare, crossing, describe
from lmcourse.course.reference.result import ReferenceResult, load, load_weights, reference_dir
from lmcourse.course.reference.running import live_run, run, verify

__all__ = ["REFERENCES", "Reference", "ReferenceResult", "SeedRun", "StaleReference", "compare",
           "crossing", "describe", "live_run", "load", "load_weights", "reference_dir", "run",
           "verify"]
