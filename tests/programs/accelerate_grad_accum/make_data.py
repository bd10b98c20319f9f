#!/usr/bin/env python3
"""Local stand-ins for what accelerate's gradient_accumulation.py downloads (our own helper):

- data/train.tsv, data/validation.tsv: sentence pairs with a label, the shape of GLUE MRPC
  (sentence1, sentence2, label: 1 when the second says the same as the first). Here the second is
  the first's words in a new order (1), or as many other words (0): learnable from the words.
- tokenizer/: a word-level tokenizer over that vocabulary, with BERT's [CLS] A [SEP] B [SEP]
  pairs and token types, saved by transformers' save_pretrained (for `bert-base-cased`);
- model/config.json: a tiny BERT for sequence classification, dropout off (its masks, drawn per
  process, would differ by layout), for `AutoModelForSequenceClassification.from_config`.

usage: python make_data.py   (in the folder gradient_accumulation.py runs in)
"""
import os
import random

from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import BertConfig, PreTrainedTokenizerFast


def pairs(rng, words, count):
    out = []
    for _ in range(count):
        first = rng.sample(words, rng.randint(6, 14))
        same = rng.random() < 0.5
        second = rng.sample(first, len(first)) if same else rng.sample(words, len(first))
        out.append((" ".join(first), " ".join(second), int(same)))
    return out


def main():
    rng = random.Random(5)
    words = ["w%03d" % i for i in range(300)]
    os.makedirs("data", exist_ok=True)
    for split, count in (("train", 2000), ("validation", 200)):
        with open(os.path.join("data", split + ".tsv"), "w", encoding="utf-8") as f:
            for a, b, label in pairs(rng, words, count):
                f.write(f"{a}\t{b}\t{label}\n")
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for w in words:
        vocab[w] = len(vocab)
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                            cls_token="[CLS]", sep_token="[SEP]", model_max_length=64,
                            model_input_names=["input_ids", "token_type_ids", "attention_mask"]
                            ).save_pretrained("tokenizer")
    BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
               attention_probs_dropout_prob=0.0, num_labels=2, pad_token_id=0).save_pretrained("model")


if __name__ == "__main__":
    main()
