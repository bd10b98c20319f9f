#!/usr/bin/env python3
"""Plant tiny pretokenized shards where llama2.c's tinystories.py looks for them (our own helper).

PretokDataset reads every data/tok{V}/*.bin (vocab_source=custom) or
data/TinyStories_all_data/*.bin (vocab_source=llama2) as a flat array of uint16 token ids;
the first shard (sorted by name) is the validation split, the others are training.
We write two shards of a deterministic, learnable token stream (a noisy counter).

usage: python3 make_data.py [DATA_DIR] [--vocab_size V] [--tokens N]
  DATA_DIR defaults to ./data (train.py runs with the working directory that holds data/)
"""
import argparse
import os
import random
from array import array


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", nargs="?", default="data")
    parser.add_argument("--vocab_size", type=int, default=512, help="0 = the Llama 2 vocabulary layout (32000)")
    parser.add_argument("--tokens", type=int, default=1 << 16, help="tokens per shard")
    args = parser.parse_args()
    if args.vocab_size == 0:
        out, vocab = os.path.join(args.data_dir, "TinyStories_all_data"), 32000
    else:
        out, vocab = os.path.join(args.data_dir, "tok%d" % args.vocab_size), args.vocab_size
    os.makedirs(out, exist_ok=True)
    rng = random.Random(7)
    for shard in range(2):
        tokens = array("H")
        t = 1
        for _ in range(args.tokens):
            t = (t + 1) % vocab if rng.random() < 0.9 else rng.randrange(vocab)
            tokens.append(t)
        if tokens.itemsize != 2:
            raise SystemExit("array('H') is not 16-bit here")
        with open(os.path.join(out, "data%02d.bin" % shard), "wb") as f:
            tokens.tofile(f)  # native byte order, as numpy.memmap(dtype=uint16) reads it
    print("wrote 2 shards of %d tokens (vocab %d) to %s" % (args.tokens, vocab, out))


if __name__ == "__main__":
    main()
