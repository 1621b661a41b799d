"""Stage `decode` (rules/decode.smk, and lm.smk's next-word predictions): a trained model's outputs
on a test set: translations with `<unk>` replaced, a language model's next words."""
