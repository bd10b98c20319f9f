#!/usr/bin/env python3
"""Local data for transformers' run_clm.py (our own helper): no download, no `datasets`.

Writes
- data/train.txt: a deterministic, learnable text (words of a 200-word vocabulary drawn from a
  sparse Markov chain, one sentence a line), which run_clm.py (with 01-local-text.patch) reads
  line by line, tokenizes, and cuts into blocks of --block_size tokens;
- tokenizer/: a word-level tokenizer over exactly those words, saved with transformers' own
  save_pretrained, so that `--tokenizer_name tokenizer` loads it from this folder (the script
  refuses to train a model without a tokenizer, and a hub one would be a download).

usage: python make_data.py   (in the folder run_clm.py runs in)
"""
import os
import random

from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast


def main():
    rng = random.Random(11)
    words = ["w%03d" % i for i in range(200)]
    # Each word is followed by one of four others: a next-token loss well below log(200).
    follow = {w: rng.sample(words, 4) for w in words}
    os.makedirs("data", exist_ok=True)
    word = words[0]
    with open(os.path.join("data", "train.txt"), "w", encoding="utf-8") as f:
        for _ in range(3000):
            line = []
            for _ in range(rng.randint(8, 24)):
                word = rng.choice(follow[word])
                line.append(word)
            f.write(" ".join(line) + "\n")
    vocab = {"[UNK]": 0, "[EOS]": 1}
    for w in words:
        vocab[w] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", eos_token="[EOS]",
                                   model_max_length=64)
    fast.save_pretrained("tokenizer")


if __name__ == "__main__":
    main()
