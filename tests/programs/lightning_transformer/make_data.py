#!/usr/bin/env python3
"""Plant a small text where Lightning's WikiText2 demo dataset looks for it (our own helper).

WikiText2(data_dir=Path("./data")) reads data/wikitext-2.txt, splits each line into words and
appends `<eos>`; the vocabulary is every word seen. We write a deterministic, learnable text:
words of a 200-word vocabulary drawn from a sparse Markov chain, about 210 000 tokens (6 000
blocks of 35), enough for transformer.py's 4 000 held-out blocks and a few epochs' worth of
steps at its batch size of 20.

usage: python3 make_data.py [DATA_DIR]   (DATA_DIR defaults to ./data)
"""
import os
import random
import sys


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "data"
    os.makedirs(out, exist_ok=True)
    rng = random.Random(7)
    words = ["w%03d" % i for i in range(200)]
    # Each word is followed by one of four others: a next-word loss well below log(200).
    follow = {w: rng.sample(words, 4) for w in words}
    lines, tokens, word = [], 0, words[0]
    while tokens < 210_000:
        line = []
        for _ in range(rng.randint(12, 30)):
            word = rng.choice(follow[word])
            line.append(word)
        lines.append(" ".join(line))
        tokens += len(line) + 1  # the <eos> WikiText2 adds
    with open(os.path.join(out, "wikitext-2.txt"), "w", encoding="utf8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
