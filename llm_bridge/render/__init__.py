"""Per-environment serialisers: a batch of states in, one prompt per live agent out."""
