"""Stage `report` (rules/report.smk): the papers' tables and figures from the trained models'
outputs, the claims table, the deviations ledger and the training diagnostics."""
