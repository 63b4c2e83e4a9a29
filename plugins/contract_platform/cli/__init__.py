"""``contractctl``: one module per verb, each a few lines over the domain."""
