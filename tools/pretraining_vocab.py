"""Choose and write the pre-training vocabulary: ``python -m tools.pretraining_vocab``.

Learns the frequency WordPiece vocabulary from the Wikipedia excerpt's training articles at
each of ``PRETRAINING_SIZES``, prints pieces per word on the tuning text, and writes the
chosen size's vocabulary to ``data/wiki_wordpiece_8000.txt`` (the file name states the size
the course committed; a different choice is an error to look at, not a silent rename).
"""

from __future__ import annotations

import sys

from lmcourse.tokenizers import wiki_pieces as wp


def main() -> int:
    chosen, figures = wp.choose_pretraining_size()
    for size, row in figures.items():
        print(f"{size:>6,} pieces: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items())
              + ("   <- chosen" if size == chosen else ""))
    if chosen is None or str(chosen) not in wp.PRETRAINING_VOCAB.name:
        print(f"chose {chosen}, but the course reads {wp.PRETRAINING_VOCAB.name}: update "
              "PRETRAINING_VOCAB and the text that names the size", file=sys.stderr)
        return 1
    tmp = wp.PRETRAINING_VOCAB.with_suffix(".txt.tmp")
    tmp.write_text("\n".join(wp.wiki_wordpiece(chosen, "frequency").vocab) + "\n", encoding="utf-8")
    tmp.replace(wp.PRETRAINING_VOCAB)
    print(f"wrote {wp.PRETRAINING_VOCAB.relative_to(wp.PRETRAINING_VOCAB.parents[1])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
