"""Stage `data` (rules/data.smk, bpe.smk, embeddings.smk, align.smk, demo.smk): the released corpora
fetched, extracted, tokenized, truecased, byte-pair encoded and counted; target-side embeddings and
the alignment dictionary; the demo's synthetic world and its mirror of the releases."""
