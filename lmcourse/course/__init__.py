"""The course's harness, kept apart from the concepts the course teaches.

Model code (``lmcourse.models``, ``lmcourse.tokenizers``, ``lmcourse.autograd`` ...) never
imports this package; the harness imports the models. It holds:

- ``keys``: ``digest(obj)`` (the one hash of data: tensors, arrays, sparse matrices, files,
  nested lists and dicts) and ``recipe_key(name, recipe)`` (with torch version and device);
- ``cache``: the course cache (named, keyed, atomic, locked results a notebook only reads);
- ``artifacts``: the registry of named artifacts, one function each, shared by a notebook
  cell and ``make teacher``;
- ``reference``: reference runs, a recipe run once to its real budget and committed under
  ``reference/<name>/``; ``make reference NAME`` rewrites one, ``make test`` checks it;
- ``claims``: the claims ledger, every verdict a notebook prints, recorded.
"""
