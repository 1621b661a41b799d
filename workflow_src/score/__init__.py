"""Stage `score` (rules/score.smk): BLEU, METEOR and their paired bootstrap; where continuous
outputs land among the target embeddings; a model's nearest representations; the evidence a claim
is decided by."""
