"""Adapters that plug ctxattn into other projects' serving engines.

Each adapter is its own module and imports its host project only when imported itself; importing
`ctxattn` (or this package) imports none of them.

- `ctxattn.integrations.transformers`: the paged attention of Hugging Face transformers'
  continuous batching (`attn_implementation="paged|ctxattn"`), see docs/transformers.md.
"""
