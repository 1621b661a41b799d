"""Stage `train` (rules/train.smk, and lm.smk's training): one translation model or language model
per job, checkpointed every epoch, with dev BLEU (`decode`, `score`) and the first-epoch bigram level."""
