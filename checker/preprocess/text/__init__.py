"""Text inputs: a raw text through the template and the bundle's tokenizer to token ids; the kind the stages
see is kind.KIND."""
